import Synchronization

/// A monotonic clock that moves only when a test says so.
final class ManualClock: Sendable {
  private let seconds: Mutex<Double>

  init(_ start: Double = 1000) { seconds = Mutex(start) }

  var now: Double { seconds.withLock { $0 } }

  func advance(_ delta: Double) { seconds.withLock { $0 += delta } }

  var clock: @Sendable () -> Double { { self.now } }
}
