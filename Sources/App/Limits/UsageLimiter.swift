import Foundation
import Storage

/// Why an end user's upload was refused by their daily quota.
public enum QuotaError: Error, Sendable, Equatable {
  /// The user has stored `limits.userDailyFiles` files today (UTC) (429).
  case dailyFiles(retryAfterSeconds: Int)
  /// The upload would take the user past `limits.userDailyBytes` today (UTC) (429).
  case dailyBytes(retryAfterSeconds: Int)
}

/// Counts what token callers upload in the index — per token `jti` against its `max_files` and
/// `max_bytes`, and per (tenant, user) and UTC day against the daily quota — and refuses an
/// upload that would pass a bound. API-key uploads are not counted.
///
/// Counters live in the index, not in memory, so they hold across restarts and, with a shared
/// index, across nodes. Each reservation is one atomic index call; files that end up not
/// stored are given back. Bytes are the image bytes the client sent (the body, or the sum of
/// the file parts), the cost a phone can put on the server.
public struct UsageLimiter: Sendable {
  /// The daily quota of one end user; 0 turns a bound off.
  public struct Configuration: Sendable, Equatable {
    /// Files one user may store per UTC day (`limits.userDailyFiles`).
    public var dailyFiles = 0
    /// Upload bytes one user may send per UTC day (`limits.userDailyBytes`).
    public var dailyBytes = 0

    public init(dailyFiles: Int = 0, dailyBytes: Int = 0) {
      self.dailyFiles = dailyFiles
      self.dailyBytes = dailyBytes
    }

    public func validate() throws(ConfigurationError) {
      guard dailyFiles >= 0, dailyBytes >= 0 else {
        throw ConfigurationError("limits.userDailyFiles and limits.userDailyBytes must be 0 (off) or more")
      }
    }
  }

  /// What was reserved, to give back what was not used.
  public struct Hold: Sendable, Equatable {
    /// The counters added to.
    public var keys: [UsageKey]

    /// No counter: nothing to give back.
    public static let none = Hold(keys: [])
  }

  public let configuration: Configuration
  /// Seconds a `jti` counter outlives the token's `exp` (the verifier's leeway).
  public let tokenLeewaySeconds: Int

  public init(configuration: Configuration, tokenLeewaySeconds: Int) {
    self.configuration = configuration
    self.tokenLeewaySeconds = tokenLeewaySeconds
  }

  static let secondsPerDay = 86_400

  /// Reserves `files` files and `bytes` bytes for `principal` at `now`; throws storage errors.
  public func reserve(for principal: Principal, files: Int, bytes: Int, store: AttachmentStore, now: Date)
    throws
    -> Result<Hold, AccessError>
  {
    guard let user = principal.user else { return .success(.none) }
    let amount = UsageAmount(files: files, bytes: bytes)
    var hold = Hold.none
    if let grant = principal.token, let jti = grant.jti, grant.maxFiles != nil || grant.maxBytes != nil {
      let key = UsageKey(tenant: principal.tenant, name: "jti:" + jti)
      let expiry = Date(timeIntervalSince1970: TimeInterval(grant.expiresAt + tokenLeewaySeconds))
      let limits = UsageLimits(maxFiles: grant.maxFiles, maxBytes: grant.maxBytes)
      switch try store.reserveUsage(key, adding: amount, limits: limits, expiresAt: expiry) {
      case .reserved: hold.keys.append(key)
      case .filesExceeded: return .failure(.token(.maxFilesUsed))
      case .bytesExceeded: return .failure(.token(.maxBytesExceeded))
      }
    }
    if configuration.dailyFiles > 0 || configuration.dailyBytes > 0 {
      let seconds = Int(now.timeIntervalSince1970.rounded(.down))
      let day = seconds / Self.secondsPerDay
      let dayEnd = (day + 1) * Self.secondsPerDay
      // The day number comes first and has no colon, so the name reads back unambiguously.
      let key = UsageKey(tenant: principal.tenant, name: "day:\(day):" + user)
      let limits = UsageLimits(
        maxFiles: configuration.dailyFiles > 0 ? configuration.dailyFiles : nil,
        maxBytes: configuration.dailyBytes > 0 ? configuration.dailyBytes : nil)
      let refusal: QuotaError?
      switch try store.reserveUsage(
        key, adding: amount, limits: limits, expiresAt: Date(timeIntervalSince1970: TimeInterval(dayEnd)))
      {
      case .reserved:
        hold.keys.append(key)
        refusal = nil
      case .filesExceeded: refusal = .dailyFiles(retryAfterSeconds: max(1, dayEnd - seconds))
      case .bytesExceeded: refusal = .dailyBytes(retryAfterSeconds: max(1, dayEnd - seconds))
      }
      if let refusal {
        try release(hold, files: files, bytes: bytes, store: store)
        return .failure(.quota(refusal))
      }
    }
    return .success(hold)
  }

  /// Gives back `files` files and `bytes` bytes of a hold (uploads that were not stored).
  public func release(_ hold: Hold, files: Int, bytes: Int, store: AttachmentStore) throws {
    guard files > 0 || bytes > 0 else { return }
    for key in hold.keys { try store.releaseUsage(key, amount: UsageAmount(files: files, bytes: bytes)) }
  }
}
