import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads for CPU-heavy handler work, with a bounded queue. Work beyond
/// `threads + queueLength` items is refused at once, so overload turns into fast 503s instead
/// of a growing backlog.
public final class WorkerPool: Sendable {
  private struct State {
    /// Waiting work from `head` on; a taken slot is cleared at once, so a finished job's
    /// captures (a whole upload body) are freed when it returns, not at the next compaction.
    var queue: [(@Sendable () -> Void)?] = []
    var head = 0
    /// Accepted and not yet finished (queued + running).
    var inFlight = 0
    var stopping = false
  }

  /// Threads that run work.
  public let threadCount: Int
  /// Items that may wait for a thread.
  public let queueLength: Int
  private let state = Mutex(State())
  private let available = DispatchSemaphore(value: 0)
  private let finished = DispatchGroup()

  /// Starts `threads` worker threads, named `attachd-<name>-<index>` (the kernel keeps 15
  /// characters of a thread's name: keep `name` short).
  public init(threads: Int, queueLength: Int, name: String = "cpu") {
    precondition(threads > 0 && queueLength >= 0)
    self.threadCount = threads
    self.queueLength = queueLength
    for index in 0..<threads {
      finished.enter()
      let threadName = "attachd-\(name)-\(index)"
      let thread = Thread { [self] in
        // Named from inside: Foundation on Linux names the kernel thread only then.
        Thread.current.name = threadName
        self.workLoop()
        self.finished.leave()
      }
      thread.name = threadName
      thread.start()
    }
  }

  /// Work accepted and not yet finished.
  public var inFlight: Int { state.withLock { $0.inFlight } }

  /// Work waiting for a thread (for the queue-depth metric).
  public var queueDepth: Int { state.withLock { $0.queue.count - $0.head } }

  /// Queues `work` unless the pool and its queue are full (or stopping); false when refused.
  public func trySubmit(_ work: @escaping @Sendable () -> Void) -> Bool {
    let accepted = state.withLock { state -> Bool in
      guard !state.stopping, state.inFlight < threadCount + queueLength else { return false }
      state.inFlight += 1
      state.queue.append(work)
      return true
    }
    if accepted { available.signal() }
    return accepted
  }

  /// Refuses new work; the threads leave once the queue is empty. With `wait`, blocks until
  /// they have (without, a stuck job cannot hold up the caller, e.g. `Server.run()` past its
  /// drain deadline).
  public func shutdown(wait: Bool = true) {
    let alreadyStopping = state.withLock { state -> Bool in
      defer { state.stopping = true }
      return state.stopping
    }
    guard !alreadyStopping else { return }
    for _ in 0..<threadCount { available.signal() }
    if wait { finished.wait() }
  }

  private func workLoop() {
    while true {
      available.wait()
      let work = state.withLock { state -> (@Sendable () -> Void)? in
        guard state.head < state.queue.count else { return nil }
        let work = state.queue[state.head]
        state.queue[state.head] = nil
        state.head += 1
        // Compact now and then so the array does not grow without bound.
        if state.head > 64 && state.head * 2 > state.queue.count {
          state.queue.removeFirst(state.head)
          state.head = 0
        }
        return work
      }
      guard let work else {
        // A stop signal: leave once nothing is queued.
        if state.withLock({ $0.stopping && $0.head >= $0.queue.count }) { return }
        continue
      }
      work()
      state.withLock { $0.inFlight -= 1 }
    }
  }
}
