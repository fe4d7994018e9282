import Foundation
import Synchronization

/// Asks the real storage backends whether they take writes, for `/readyz`.
///
/// A probe costs real work (an S3 PUT and DELETE, an index write), and load balancers ask
/// every few seconds per node: an answer is reused for `lifetime` (2 s). One probe runs at a
/// time; a caller arriving meanwhile gets the previous answer instead of waiting (and instead
/// of piling up on a backend that hangs). Before the first probe finishes, callers wait for it.
public final class StorageProbe: Sendable {
  /// How long an answer is reused.
  public let lifetime: TimeInterval
  private let check: @Sendable () throws -> Void
  private let state = Mutex<State>(State())
  private let firstAnswer = DispatchSemaphore(value: 0)

  private struct State {
    var answer: String??  // nil: none yet; .some(nil): ready; .some(reason): not ready
    var answeredAt = Date.distantPast
    var running = false
  }

  /// A probe running `check` (which throws the reason storage is not writable).
  public init(lifetime: TimeInterval = 2, check: @escaping @Sendable () throws -> Void) {
    self.lifetime = lifetime
    self.check = check
  }

  /// Nil when the backends took a write within `lifetime`, else why not.
  public func problem() -> String? {
    let now = Date()
    enum Step {
      case answer(String?)
      case probe
      case wait
    }
    let step = state.withLock { state -> Step in
      if let answer = state.answer, now.timeIntervalSince(state.answeredAt) < lifetime {
        return .answer(answer)
      }
      if state.running { return state.answer.map(Step.answer) ?? .wait }
      state.running = true
      return .probe
    }
    switch step {
    case .answer(let answer): return answer
    case .wait:
      firstAnswer.wait()
      firstAnswer.signal()  // let the next waiter through too
      return state.withLock { $0.answer ?? "storage probe gave no answer" }
    case .probe:
      var reason: String?
      do { try check() } catch { reason = String(describing: error) }
      let first = state.withLock { state -> Bool in
        let first = state.answer == nil
        state.answer = .some(reason)
        state.answeredAt = Date()
        state.running = false
        return first
      }
      if first { firstAnswer.signal() }
      return reason
    }
  }
}
