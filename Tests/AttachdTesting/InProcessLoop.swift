import Dispatch

/// The in-process mode's event loop: one serial queue on which `head`, the body consumer's
/// calls, responses and completions happen, as on a server's loop thread. Other threads hop
/// onto it; the test's own thread never runs the handler.
final class InProcessLoop: Sendable {
  private let queue = DispatchQueue(label: "attachd-test-loop")
  private let key = DispatchSpecificKey<Bool>()

  init() {
    queue.setSpecific(key: key, value: true)
  }

  /// Whether the caller is on the loop.
  var inLoop: Bool { DispatchQueue.getSpecific(key: key) == true }

  /// Runs `work` on the loop later.
  func execute(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

  /// Runs `work` now when on the loop, else later on it.
  func run(_ work: @escaping @Sendable () -> Void) {
    if inLoop { work() } else { queue.async(execute: work) }
  }
}
