import Synchronization

/// A token bucket per key: `rate` requests per second on average, `burst` at once.
///
/// Memory is bounded: a bucket that has refilled completely holds no information (a new
/// bucket starts full), so such buckets are dropped whenever the table reaches
/// `maxTrackedKeys`, and if every tracked key is still busy the least recently used one goes.
/// Keys are key ids from the configuration, so the table rarely grows anywhere near the bound.
public final class RateLimiter: Sendable {
  /// The limit every key gets.
  public struct Configuration: Sendable, Equatable {
    /// Average requests per second per key; 0 turns rate limiting off.
    public var requestsPerSecond: Double = 10
    /// Requests a key may send at once after being idle (the bucket size).
    public var burst: Int = 20
    /// Buckets kept at most (memory bound).
    public var maxTrackedKeys: Int = 10_000

    public init(requestsPerSecond: Double = 10, burst: Int = 20, maxTrackedKeys: Int = 10_000) {
      self.requestsPerSecond = requestsPerSecond
      self.burst = burst
      self.maxTrackedKeys = maxTrackedKeys
    }

    public func validate() throws(ConfigurationError) {
      guard requestsPerSecond >= 0, requestsPerSecond.isFinite else {
        throw ConfigurationError("limits.requestsPerSecond must be 0 (off) or a positive number")
      }
      guard burst >= 1 else { throw ConfigurationError("limits.burst must be at least 1, not \(burst)") }
      guard maxTrackedKeys >= 1 else {
        throw ConfigurationError("limits.maxTrackedKeys must be at least 1, not \(maxTrackedKeys)")
      }
    }
  }

  struct Bucket {
    var tokens: Double
    var updated: Double
  }

  public let configuration: Configuration
  private let clock: MonotonicClock
  private let buckets = Mutex<[String: Bucket]>([:])

  /// A limiter reading time from `clock` (monotonic seconds).
  public init(configuration: Configuration, clock: @escaping MonotonicClock = systemMonotonicClock) {
    self.configuration = configuration
    self.clock = clock
  }

  /// Takes one token from `key`'s bucket, or says how long until one is there.
  public func acquire(key: String) -> LimitDecision {
    let rate = configuration.requestsPerSecond
    guard rate > 0 else { return .allowed }
    let burst = Double(configuration.burst)
    let now = clock()
    return buckets.withLock { table in
      var bucket: Bucket
      if let existing = table[key] {
        bucket = existing
        // max(0, …): a clock that steps back must not drain the bucket.
        bucket.tokens = min(burst, bucket.tokens + max(0, now - bucket.updated) * rate)
      } else {
        if table.count >= configuration.maxTrackedKeys {
          Self.evict(&table, now: now, rate: rate, burst: burst)
        }
        bucket = Bucket(tokens: burst, updated: now)
      }
      bucket.updated = now
      let decision: LimitDecision
      if bucket.tokens >= 1 {
        bucket.tokens -= 1
        decision = .allowed
      } else {
        let seconds = ((1 - bucket.tokens) / rate).rounded(.up)
        decision = .limited(retryAfterSeconds: max(1, Int(min(seconds, 86_400))))
      }
      table[key] = bucket
      return decision
    }
  }

  /// Buckets currently held (for tests and metrics).
  public var trackedKeys: Int { buckets.withLock { $0.count } }

  /// Drops every full bucket; if none is full, the least recently used one.
  private static func evict(_ table: inout [String: Bucket], now: Double, rate: Double, burst: Double) {
    let before = table.count
    table = table.filter { $0.value.tokens + max(0, now - $0.value.updated) * rate < burst }
    if table.count == before, let oldest = table.min(by: { $0.value.updated < $1.value.updated }) {
      table[oldest.key] = nil
    }
  }
}
