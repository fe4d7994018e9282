import Foundation

/// A process-wide budget of bytes that concurrent decodes reserve before they allocate.
///
/// Policy: a reservation larger than the whole budget fails at once; otherwise it waits up to
/// `waitTimeout` for other decodes to release, then fails with `memory_budget` (the App answers
/// 503 + Retry-After). Waiting a little smooths bursts; never waiting forever keeps a worker
/// from being parked behind a slow 200 MP decode.
public final class MemoryBudget: @unchecked Sendable {
  /// The bytes that may be reserved at once.
  public let capacity: Int
  /// How long a reservation waits for room.
  public let waitTimeout: Duration
  // NSCondition guards `reserved`; every access is inside lock/unlock.
  private let condition = NSCondition()
  private var reserved = 0

  /// The budget shared by every pipeline that is not given its own.
  public static let shared = MemoryBudget(capacity: 2 << 30, waitTimeout: .seconds(5))

  public init(capacity: Int, waitTimeout: Duration = .seconds(5)) {
    self.capacity = capacity
    self.waitTimeout = waitTimeout
  }

  /// Bytes reserved right now (for metrics).
  public var inUse: Int {
    condition.lock()
    defer { condition.unlock() }
    return reserved
  }

  /// Reserves `bytes`, waiting up to `waitTimeout`; the returned reservation releases them.
  public func reserve(_ bytes: Int) throws(PipelineError) -> Reservation {
    let amount = max(0, bytes)
    guard amount <= capacity else {
      throw PipelineError(
        .memoryBudget, "decoding needs about \(amount >> 20) MiB, more than the \(capacity >> 20) MiB budget")
    }
    let (seconds, attoseconds) = waitTimeout.components
    let deadline = Date().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    condition.lock()
    defer { condition.unlock() }
    while reserved + amount > capacity {
      if !condition.wait(until: deadline) && reserved + amount > capacity {
        throw PipelineError(.memoryBudget, "the decoder memory budget is exhausted; try again later")
      }
    }
    reserved += amount
    return Reservation(budget: self, bytes: amount)
  }

  fileprivate func release(_ bytes: Int) {
    condition.lock()
    reserved -= bytes
    condition.broadcast()
    condition.unlock()
  }

  /// Bytes held from a budget; released once, by `release()` or when the last copy goes away.
  public final class Reservation: @unchecked Sendable {
    private let budget: MemoryBudget
    public let bytes: Int
    private var released = false
    private let lock = NSLock()

    fileprivate init(budget: MemoryBudget, bytes: Int) {
      self.budget = budget
      self.bytes = bytes
    }

    public func release() {
      lock.lock()
      let first = !released
      released = true
      lock.unlock()
      if first { budget.release(bytes) }
    }

    deinit { release() }
  }
}
