import Synchronization

/// Caps how many uploads one key has running at once.
///
/// A key over its cap gets 429 + `Retry-After` (its own doing, not server overload: 503 is
/// kept for the whole server being full or draining). Memory is bounded by the uploads in
/// flight: a key's entry disappears when its last upload ends.
public final class UploadConcurrencyLimiter: Sendable {
  public struct Configuration: Sendable, Equatable {
    /// Uploads one key may have in flight; 0 turns the cap off.
    public var maxConcurrentUploadsPerKey: Int = 4
    /// `Retry-After` seconds sent with the 429.
    public var retryAfterSeconds: Int = 1

    public init(maxConcurrentUploadsPerKey: Int = 4, retryAfterSeconds: Int = 1) {
      self.maxConcurrentUploadsPerKey = maxConcurrentUploadsPerKey
      self.retryAfterSeconds = retryAfterSeconds
    }

    public func validate() throws(ConfigurationError) {
      guard maxConcurrentUploadsPerKey >= 0 else {
        throw ConfigurationError("limits.concurrentUploadsPerKey must be 0 (off) or more")
      }
      guard (1...3600).contains(retryAfterSeconds) else {
        throw ConfigurationError("limits.uploadRetryAfter must be 1…3600 seconds")
      }
    }
  }

  public let configuration: Configuration
  private let uploads = Mutex<[String: Int]>([:])

  public init(configuration: Configuration) {
    self.configuration = configuration
  }

  /// Starts an upload for `key` if it is under its cap; every `.allowed` must be paired with
  /// exactly one `release(key:)`, whatever way the upload ends.
  public func acquire(key: String) -> LimitDecision {
    let cap = configuration.maxConcurrentUploadsPerKey
    return uploads.withLock { table in
      let current = table[key, default: 0]
      if cap > 0 && current >= cap { return .limited(retryAfterSeconds: configuration.retryAfterSeconds) }
      table[key] = current + 1
      return .allowed
    }
  }

  /// Ends an upload started with an `.allowed` `acquire(key:)`.
  public func release(key: String) {
    uploads.withLock { table in
      guard let current = table[key] else {
        assertionFailure("release(key:) without acquire")
        return
      }
      table[key] = current > 1 ? current - 1 : nil
    }
  }

  /// Uploads in flight for `key`.
  public func inFlight(key: String) -> Int { uploads.withLock { $0[key, default: 0] } }

  /// Uploads in flight over all keys.
  public var totalInFlight: Int { uploads.withLock { $0.values.reduce(0, +) } }

  /// Keys with at least one upload in flight.
  public var trackedKeys: Int { uploads.withLock { $0.count } }
}
