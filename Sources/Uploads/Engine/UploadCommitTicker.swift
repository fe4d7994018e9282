import Foundation
import Synchronization

/// One background thread that asks every body being streamed into an upload, every `interval`,
/// to commit what it received since its last commit, so a slow upload's acknowledged offset
/// advances (a phone on a train may need an hour for what a fast link sends in a second, and a
/// client that resumes must not resend what already arrived), and so a silent body's writer
/// learns when a request on another node wants its upload.
///
/// Consumers are held weakly; one that answers `false` (its body is over) is dropped.
final class UploadCommitTicker: Sendable {
  private final class Entry: @unchecked Sendable {
    // Written once under the registry's lock; read on the ticker thread only.
    weak var consumer: UploadBodyConsumer?
    init(_ consumer: UploadBodyConsumer) { self.consumer = consumer }
  }

  /// How long received bytes may wait before a timer commit.
  let interval: Duration
  private let entries = Mutex<[ObjectIdentifier: Entry]>([:])
  private let wake = DispatchSemaphore(value: 0)
  private let stopped = Atomic<Bool>(false)
  private let finished = DispatchSemaphore(value: 0)
  private let started = Atomic<Bool>(false)

  /// A ticker committing every `interval` (not yet running: `start`).
  init(interval: Duration) {
    self.interval = interval
  }

  /// Starts the thread (once).
  func start() {
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
    Thread.detachNewThread { [self] in
      // Half the interval: a body waits at most 1.5 intervals for its timer commit.
      let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) * 1e-18
      while !stopped.load(ordering: .acquiring) {
        _ = wake.wait(timeout: .now() + max(0.01, seconds / 2))
        if stopped.load(ordering: .acquiring) { break }
        tickAll()
      }
      finished.signal()
    }
  }

  /// Stops the thread and waits for it.
  func stop() {
    guard started.load(ordering: .acquiring), !stopped.exchange(true, ordering: .acquiringAndReleasing)
    else { return }
    wake.signal()
    finished.wait()
  }

  /// Bodies being streamed now.
  var count: Int { entries.withLock { $0.count } }

  func register(_ consumer: UploadBodyConsumer) {
    entries.withLock { $0[ObjectIdentifier(consumer)] = Entry(consumer) }
  }

  func unregister(_ consumer: UploadBodyConsumer) {
    _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(consumer)) }
  }

  /// One round: every live consumer gets a tick; finished or freed ones are dropped.
  func tickAll(now: ContinuousClock.Instant = .now) {
    let current = entries.withLock { Array($0) }
    var gone: [(ObjectIdentifier, Entry)] = []
    for (key, entry) in current {
      guard let consumer = entry.consumer, consumer.tick(now: now, interval: interval) else {
        gone.append((key, entry))
        continue
      }
    }
    guard !gone.isEmpty else { return }
    entries.withLock { entries in
      // Only the entry looked at: a consumer registered again meanwhile stays.
      for (key, entry) in gone where entries[key] === entry { entries.removeValue(forKey: key) }
    }
  }
}
