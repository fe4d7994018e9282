import Foundation

/// Names one usage counter: files and bytes counted under a tenant-scoped name until it expires.
///
/// The App names counters (one per token `jti`, one per end user and day); the index only
/// adds, checks and forgets them.
public struct UsageKey: Sendable, Hashable {
  /// The tenant the counter belongs to.
  public var tenant: String
  /// The counter's name within the tenant (opaque to the index).
  public var name: String

  public init(tenant: String, name: String) {
    self.tenant = tenant
    self.name = name
  }
}

/// Files and bytes, counted or to be counted.
public struct UsageAmount: Sendable, Hashable {
  public var files: Int
  public var bytes: Int

  public init(files: Int, bytes: Int) {
    self.files = files
    self.bytes = bytes
  }

  /// Nothing.
  public static let zero = UsageAmount(files: 0, bytes: 0)
}

/// Upper bounds of a counter; nil is no bound.
public struct UsageLimits: Sendable, Hashable {
  public var maxFiles: Int?
  public var maxBytes: Int?

  public init(maxFiles: Int? = nil, maxBytes: Int? = nil) {
    self.maxFiles = maxFiles
    self.maxBytes = maxBytes
  }
}

/// The outcome of `AttachmentIndex.reserveUsage`.
public enum UsageReservation: Sendable, Hashable {
  /// Added; the counter now holds this total.
  case reserved(UsageAmount)
  /// Nothing added: the files would pass `maxFiles`. Carries the counter as it is.
  case filesExceeded(UsageAmount)
  /// Nothing added: the bytes would pass `maxBytes` (files were within theirs).
  case bytesExceeded(UsageAmount)
}

extension UsageLimits {
  /// What adding `amount` to a counter holding `current` comes to: the new total, or the limit
  /// it would pass (files first). Every index decides a reservation with it, under its lock.
  func reserve(_ amount: UsageAmount, on current: UsageAmount) -> UsageReservation {
    if let maxFiles, current.files + amount.files > maxFiles { return .filesExceeded(current) }
    if let maxBytes, current.bytes + amount.bytes > maxBytes { return .bytesExceeded(current) }
    return .reserved(UsageAmount(files: current.files + amount.files, bytes: current.bytes + amount.bytes))
  }
}
