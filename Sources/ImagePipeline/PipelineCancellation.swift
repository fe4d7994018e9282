import Synchronization

/// A caller's way to stop a pipeline run early: the client hung up, the server is going down.
///
/// Sendable and cheap to check (one relaxed atomic load). The pipeline checks it, with its
/// deadline, before every step, and decoders that work in tiles or strips check between them;
/// a run that finds it cancelled throws `cancelled` and stores nothing. Work inside one C call
/// (a TurboJPEG decode, libheif's whole decode) is not interrupted: it is noticed when the call
/// returns.
public final class PipelineCancellation: Sendable {
  private let flag = Atomic<Bool>(false)

  /// A signal not yet raised.
  public init() {}

  /// Asks the run to stop at its next check; from any thread, any number of times.
  public func cancel() { flag.store(true, ordering: .relaxed) }

  /// Whether `cancel()` has been called.
  public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

/// Where a run may stop: its caller's cancellation and its deadline, checked together.
struct Checkpoint: Sendable {
  var cancellation: PipelineCancellation?
  var deadline: ContinuousClock.Instant?

  /// Never stops (steps run on their own in tests, `inspect`).
  static let never = Checkpoint(cancellation: nil, deadline: nil)

  /// Throws `cancelled` once the caller has cancelled, `deadline_exceeded` once the deadline
  /// has passed; otherwise returns at the cost of an atomic load and a clock read.
  func check() throws(PipelineError) {
    if let cancellation, cancellation.isCancelled { throw .cancelled() }
    if let deadline, ContinuousClock.now >= deadline { throw .deadlineExceeded() }
  }
}
