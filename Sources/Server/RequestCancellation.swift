import Synchronization

/// Says that a request's client has gone (or timed out) before its response was written
/// whole: a cheap token that work on other threads polls or hooks into. Once it is cancelled
/// the request's connection is closed (or closing): an answer sent after that is dropped.
///
/// The server cancels it on the connection's event loop; `isCancelled` is one atomic load, so
/// a long job (an image pipeline between steps) can check it as often as it likes, or bridge
/// it to its own cancellation with `onCancel`.
public final class RequestCancellation: Sendable {
  private let cancelled = Atomic<Bool>(false)
  private let callbacks = Mutex<[@Sendable () -> Void]>([])

  public init() {}

  /// Whether the request was cancelled.
  public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

  /// Runs `callback` once when the request is cancelled (at once, on this thread, if it
  /// already was). Callbacks run on the cancelling thread, often an event loop: keep them
  /// quick (set a flag, signal a condition). They are kept until the token goes away, so one
  /// may still fire after the work it was meant for has finished.
  public func onCancel(_ callback: @escaping @Sendable () -> Void) {
    let runNow = callbacks.withLock { list -> Bool in
      // Checked under the lock: `cancel` takes the list under the same lock.
      if cancelled.load(ordering: .acquiring) { return true }
      list.append(callback)
      return false
    }
    if runNow { callback() }
  }

  /// Cancels (once; later calls do nothing) and runs the callbacks.
  public func cancel() {
    let pending = callbacks.withLock { list -> [@Sendable () -> Void] in
      guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return [] }
      defer { list = [] }
      return list
    }
    for callback in pending { callback() }
  }
}
