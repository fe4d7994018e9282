private import Crypto
import Foundation

/// One upload's row: its state and who holds its lease. The rules live here as pure functions,
/// which `LeasedUploadStore` applies inside the index's row transaction (`BEGIN IMMEDIATE` in
/// SQLite, `SELECT … FOR UPDATE` in PostgreSQL).
struct UploadRecord: Sendable, Hashable {
  var state: UploadState
  /// The lease holder's token, or nil when free. A token is `<instance>.<random>`, so a store
  /// recognises leases of its own dead writers (instance is its own, writer is gone).
  var leaseHolder: String?
  /// When the lease lapses unless renewed.
  var leaseExpiresAt: Date?
  /// Set by a request that found the lease held by another instance: the holder releases the
  /// lease at its next flush.
  var leaseWanted: Bool

  /// What an attempt to take the lease found.
  enum LeaseAttempt: Equatable {
    /// Taken: the caller's token now holds the lease.
    case acquired
    /// Held by a live holder of another instance; `leaseWanted` is now set. Wait and retry.
    case held
  }

  /// True when `holder`'s lease still binds a caller of `instance` at `now`.
  ///
  /// A lease of the caller's own instance binds only if that writer is alive in memory, which
  /// the caller has already settled (pre-empted) before asking: so it never binds here.
  func leaseBinds(now: Date, instance: String) -> Bool {
    guard let holder = leaseHolder, let expiry = leaseExpiresAt else { return false }
    return expiry > now && !Self.token(holder, isOf: instance)
  }

  /// Takes the lease of a receiving upload for a writer that will append at `offset`.
  ///
  /// Order of refusals, as the IETF draft ranks them: completed, then offset, then length.
  mutating func takeWriterLease(
    token: String, instance: String, now: Date, until expiry: Date, offset: Int?, length: Int?
  ) throws -> LeaseAttempt {
    guard state.status == .receiving else {
      throw StorageError(.uploadCompleted, "upload \(state.id) is complete", offset: state.offset)
    }
    if leaseBinds(now: now, instance: instance) {
      leaseWanted = true
      return .held
    }
    if let offset, offset != state.offset {
      throw StorageError(
        .offsetMismatch, "append at \(offset), upload \(state.id) is at \(state.offset)", offset: state.offset
      )
    }
    if let length { try declare(length: length) }
    take(token: token, until: expiry)
    return .acquired
  }

  /// Completes a receiving upload, or re-claims a completed one whose claim is free, for processing.
  ///
  /// Returns `.held` when a writer of another instance still binds a receiving upload; throws
  /// `.inProgress` when another claim on a completed upload binds, `.uploadIncomplete` when
  /// bytes are missing. A processed upload is left alone (the caller answers its result).
  mutating func claimProcessing(token: String, instance: String, now: Date, until expiry: Date) throws
    -> LeaseAttempt
  {
    switch state.status {
    case .processed:
      return .acquired
    case .completed:
      // Any live claim binds, also one of this instance: its request records or abandons the
      // result, or the process dies (and its leases are cleared when the store is reopened).
      if leaseHolder != nil, let until = leaseExpiresAt, until > now {
        throw StorageError(.inProgress, "upload \(state.id) is being processed")
      }
    case .receiving:
      if leaseBinds(now: now, instance: instance) {
        leaseWanted = true
        return .held
      }
      let length = state.length ?? state.offset
      guard state.offset == length else {
        throw StorageError(
          .uploadIncomplete, "upload \(state.id) has \(state.offset) of \(length) bytes", offset: state.offset
        )
      }
      state.length = length
      state.status = .completed
    }
    take(token: token, until: expiry)
    return .acquired
  }

  /// Declares the total length; a repeat of the declared one is a no-op.
  mutating func declare(length: Int) throws {
    if state.length == length { return }
    guard state.status == .receiving else {
      throw StorageError(.uploadCompleted, "upload \(state.id) is complete", offset: state.offset)
    }
    guard state.length == nil else {
      throw StorageError(.lengthMismatch, "upload \(state.id) already has another length")
    }
    guard length >= state.offset else {
      throw StorageError(.lengthMismatch, "length \(length) below offset \(state.offset) of \(state.id)")
    }
    guard length <= state.maxLength else {
      throw StorageError(
        .lengthExceeded, "length \(length) over the maximum \(state.maxLength) of \(state.id)",
        offset: state.offset)
    }
    state.length = length
  }

  /// Records the first result; later ones are ignored. Releases the processing claim.
  mutating func record(_ result: UploadResult) throws {
    guard state.status != .receiving else {
      throw StorageError(.uploadIncomplete, "upload \(state.id) is not complete", offset: state.offset)
    }
    if state.result == nil {
      state.result = result
      state.status = .processed
    }
    release()
  }

  mutating func take(token: String, until expiry: Date) {
    leaseHolder = token
    leaseExpiresAt = expiry
    leaseWanted = false
  }

  mutating func release() {
    leaseHolder = nil
    leaseExpiresAt = nil
    leaseWanted = false
  }

  /// A new random upload id, `upl_` + 26 base32 characters.
  static func newID() -> String { SecureRandom.identifier(prefix: "upl_") }

  /// True for a string shaped like an upload id (anything else names no upload).
  static func isID(_ id: String) -> Bool { SecureRandom.isIdentifier(id, prefix: "upl_") }

  /// A new lease token of `instance`.
  static func newToken(instance: String) -> String {
    instance + "." + SecureRandom.identifier(prefix: "")
  }

  static func token(_ token: String, isOf instance: String) -> Bool {
    token.hasPrefix(instance + ".")
  }

  /// The instance a lease token belongs to (`<instance>.<random>`).
  static func instance(ofToken token: String) -> String? {
    token.lastIndex(of: ".").map { String(token[..<$0]) }
  }
}

extension UploadRecord {
  /// The row of a new upload (a fresh random id, offset 0, no lease), after checking `upload`.
  ///
  /// Throws `.invalidArgument` for an empty tenant, a negative length or maximum, a lifetime
  /// under 1 s or metadata over the configured size; `.lengthExceeded` for a length above the
  /// maximum.
  init(new upload: NewUpload, configuration: UploadStoreConfiguration, now: Date) throws {
    guard !upload.tenant.isEmpty else { throw StorageError(.invalidArgument, "empty tenant") }
    guard upload.maxLength >= 0, upload.lifetime >= 1 else {
      throw StorageError(.invalidArgument, "negative maximum length or lifetime under 1 s")
    }
    if let length = upload.length {
      guard length >= 0 else { throw StorageError(.invalidArgument, "negative upload length") }
      guard length <= upload.maxLength else {
        throw StorageError(
          .lengthExceeded, "length \(length) over the maximum \(upload.maxLength)", offset: 0)
      }
    }
    guard upload.metadata.count <= configuration.maxMetadataBytes else {
      throw StorageError(.invalidArgument, "upload metadata over \(configuration.maxMetadataBytes) bytes")
    }
    // Whole seconds, so the state returned equals the one read back later.
    let created = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
    self.init(
      state: UploadState(
        id: Self.newID(), tenant: upload.tenant, owner: upload.owner,
        protocolName: upload.protocolName, metadata: upload.metadata, length: upload.length,
        maxLength: upload.maxLength, offset: 0, status: .receiving, result: nil, createdAt: created,
        expiresAt: created.addingTimeInterval(upload.lifetime.rounded(.down))),
      leaseHolder: nil, leaseExpiresAt: nil, leaseWanted: false)
  }
}
