import Dispatch
import Foundation
import Glibc
import SandboxShims
import Synchronization

/// Something that says when a job's caller has gone, so its child can be stopped
/// (`RequestCancellation` conforms in the App).
public protocol SandboxCancellation: Sendable {
  /// Runs `callback` once when cancelled (at once when it already is).
  func onCancel(_ callback: @escaping @Sendable () -> Void)
}

/// The result of one sandboxed job.
public struct SandboxRun: Sendable {
  /// How the child ended.
  public var outcome: SandboxOutcome
  /// What the job wrote (only for `.finished`).
  public var output: [UInt8]
  /// What the helper saw of the child (time to fork, CPU, peak memory).
  public var exit: SandboxExit
  /// Whether the job was stopped because its deadline passed (else, when stopped, its caller left).
  public var deadlineExceeded: Bool
}

/// The server's decode sandbox: one helper process (this executable, `SandboxHelper`) that
/// forks a locked-down child per job. `run` hands a job its input in a sealed memory file and
/// reads what it wrote back from another; the child never serves a second job.
///
/// A supervisor thread starts the helper, starts it again at once when it dies (requests it
/// had in flight are answered `unavailable`), and replaces it after `recycleAfter` children and
/// after any seccomp violation. While no helper is up, `run` throws `unavailable`: there is no
/// fallback to running the job outside the sandbox.
public final class Sandbox: Sendable {
  private struct State {
    var current: HelperProcess?
    var stopping = false
    var replace = false
    var lastFailure: String?
  }

  public let configuration: SandboxConfiguration
  private let state = Mutex(State())
  private let nextID = Atomic<UInt64>(0)
  private let wake = DispatchSemaphore(value: 0)
  private let readyChanged = DispatchSemaphore(value: 0)
  private let finished = DispatchSemaphore(value: 0)
  private let log: @Sendable (String) -> Void

  /// Starts the supervisor, which starts the helper. `log` hears helper starts and deaths.
  public init(configuration: SandboxConfiguration, log: @escaping @Sendable (String) -> Void = { _ in }) {
    self.configuration = configuration
    self.log = log
    let thread = Thread { [self] in supervise() }
    thread.name = "attachd-sbx-sup"
    thread.start()
  }

  /// The layers of the helper in service, nil while none is.
  public var layers: SandboxLayers? { state.withLock { $0.current?.layers } }

  /// The pid of the helper in service (the process a test may kill).
  public var helperPID: Int32? { state.withLock { $0.current?.pid } }

  /// Why the last helper could not start or ended, if one did.
  public var lastFailure: String? { state.withLock { $0.lastFailure } }

  /// Waits up to `seconds` for a helper to be in service.
  @discardableResult
  public func waitUntilReady(seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while layers == nil {
      let left = deadline.timeIntervalSinceNow
      guard left > 0 else { return false }
      _ = readyChanged.wait(timeout: .now() + min(left, 0.05))
    }
    return true
  }

  /// Stops the supervisor and kills the helper (and its children).
  public func stop() {
    let helper = state.withLock { state -> HelperProcess? in
      state.stopping = true
      return state.current
    }
    wake.signal()
    helper?.terminate()
    _ = finished.wait(timeout: .now() + 5)
  }

  /// Runs `job` over `input` in a new child and returns how it ended and what it wrote.
  ///
  /// `outputCapacity` bounds what the job may write; `deadline` is how long it may take before
  /// its child is killed (`.stopped`, `deadlineExceeded`); `cancellation` kills it when the caller
  /// leaves. Waits up to `SandboxConfiguration.startTimeout` for a helper when none is in service.
  /// `inputFile`, when given, is an open file whose `range` holds the same bytes as `input`: the
  /// child's copy is then made from it by the kernel, not read through this process's memory.
  public func run(
    job: String, input: UnsafeRawBufferPointer, inputFile: (descriptor: Int32, range: Range<Int>)? = nil,
    parameters: [UInt8] = [], outputCapacity: Int, deadline: Duration,
    cancellation: (any SandboxCancellation)? = nil
  ) throws(SandboxError) -> SandboxRun {
    guard let helper = helperInService() else {
      throw .unavailable(state.withLock { $0.lastFailure } ?? "no sandbox helper is running")
    }
    let inputFile =
      if let inputFile, inputFile.range.count == input.count {
        try MemoryFile(name: "attachd-input", copying: inputFile.descriptor, range: inputFile.range)
      } else {
        try MemoryFile(name: "attachd-input", contents: input)
      }
    let outputFile = try MemoryFile(name: "attachd-output", size: outputCapacity + SandboxOutput.headerBytes)
    let id = nextID.add(1, ordering: .relaxed).newValue
    let waiter = try helper.start(
      id: id, job: job, parameters: parameters, input: inputFile.descriptor, output: outputFile.descriptor)
    inputFile.close()
    cancellation?.onCancel { [weak helper] in helper?.kill(id: id) }
    var deadlineExceeded = false
    let seconds = Double(deadline.components.seconds) + Double(deadline.components.attoseconds) * 1e-18
    if waiter.done.wait(timeout: .now() + seconds) == .timedOut {
      deadlineExceeded = true
      helper.kill(id: id)
      // The helper answers a kill at once; past a generous bound it is stuck, and gone.
      if waiter.done.wait(timeout: .now() + 10) == .timedOut {
        helper.terminate()
        _ = waiter.done.wait(timeout: .now() + 10)
      }
    }
    let exit: SandboxExit
    switch waiter.result.withLock({ $0 }) {
    case .success(let ended)?: exit = ended
    case .failure(let error)?: throw error
    case nil: throw .unavailable("the sandbox helper did not answer")
    }
    let outcome = SandboxOutcome(exit, memoryLimit: configuration.memoryLimit)
    if outcome == .violation
      || (configuration.recycleAfter > 0 && helper.started >= configuration.recycleAfter)
    {
      replaceHelper()
    }
    var output: [UInt8] = []
    if outcome == .finished { output = try outputFile.readPayload() }
    return SandboxRun(outcome: outcome, output: output, exit: exit, deadlineExceeded: deadlineExceeded)
  }

  /// The helper in service, waiting for one to start if none is.
  private func helperInService() -> HelperProcess? {
    if let helper = state.withLock({ $0.current }), helper.layers != nil, !helper.isGone { return helper }
    guard waitUntilReady(seconds: configuration.startTimeout) else { return nil }
    return state.withLock { $0.current }
  }

  /// Replaces the helper with a fresh one (after a violation, or when it has served its share).
  func replaceHelper() {
    state.withLock { $0.replace = true }
    wake.signal()
  }

  // MARK: - Supervisor

  private func supervise() {
    var backoff = 0.05
    while true {
      let (stopping, current, replace) = state.withLock { state in
        (state.stopping, state.current, state.replace)
      }
      if stopping { break }
      if current == nil || current!.isGone || replace {
        do {
          let helper = try HelperProcess(configuration: configuration) { [weak self] helper, reason in
            self?.helperGone(helper, reason: reason)
          }
          let starting = ContinuousClock.now
          guard
            let layers = helper.waitReady(seconds: max(configuration.startLimit, configuration.startTimeout))
          else {
            helper.terminate()
            throw SandboxError.unavailable("the sandbox helper did not become ready")
          }
          let old = state.withLock { state -> HelperProcess? in
            defer {
              state.current = helper
              state.replace = false
              state.lastFailure = nil
            }
            return state.current
          }
          old?.retire()
          readyChanged.signal()
          let took = (ContinuousClock.now - starting).components
          let milliseconds = took.seconds * 1000 + took.attoseconds / 1_000_000_000_000_000
          log("sandbox helper \(helper.pid) ready in \(milliseconds) ms: \(layers)")
          backoff = 0.05
        } catch {
          state.withLock { $0.lastFailure = "\(error)" }
          log("sandbox helper failed to start: \(error)")
          _ = wake.wait(timeout: .now() + backoff)
          backoff = min(backoff * 2, 2)
          continue
        }
      }
      _ = wake.wait(timeout: .now() + 1)
    }
    state.withLock { $0.current }?.terminate()
    finished.signal()
  }

  private func helperGone(_ helper: HelperProcess, reason: String) {
    let wasCurrent = state.withLock { state -> Bool in
      guard state.current === helper else { return false }
      state.current = nil
      state.lastFailure = "the sandbox helper ended: \(reason)"
      return true
    }
    if wasCurrent {
      log("sandbox helper \(helper.pid) ended (\(reason)); starting another")
      wake.signal()
    }
  }
}
