#if canImport(Glibc)
  import Glibc
#endif

/// Whether a limited action may go ahead.
public enum LimitDecision: Sendable, Equatable {
  /// Go ahead.
  case allowed
  /// Refuse with 429 and `Retry-After: retryAfterSeconds` (at least 1).
  case limited(retryAfterSeconds: Int)
}

/// Seconds on a monotonic clock, as the limiters read time; tests pass their own.
public typealias MonotonicClock = @Sendable () -> Double

/// `CLOCK_MONOTONIC` in seconds: never jumps with wall-clock changes.
public let systemMonotonicClock: MonotonicClock = {
  var now = timespec()
  clock_gettime(CLOCK_MONOTONIC, &now)
  return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
