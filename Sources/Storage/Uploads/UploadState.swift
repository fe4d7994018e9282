import Foundation

/// What a new upload is: who it belongs to, how long it may grow, how long it lives.
public struct NewUpload: Sendable, Hashable {
  /// The owning tenant; every later call names it, and another tenant's id is "not found".
  public var tenant: String
  /// The end-user subject the upload belongs to within the tenant, when a user token made it.
  public var owner: String?
  /// The total length in bytes, or nil when the client defers it (declared later or at completion).
  public var length: Int?
  /// The most bytes the upload may ever hold (the declared length may not exceed it).
  public var maxLength: Int
  /// Opaque bytes the adapter keeps with the upload (e.g. tus `Upload-Metadata`). Never logged.
  public var metadata: [UInt8]
  /// Which protocol made the upload (`ietf`, `tus`, `plain`, …): adapters refuse each other's.
  public var protocolName: String
  /// How long the upload lives after creation, in seconds, whatever its state.
  public var lifetime: TimeInterval

  /// An upload description with every field given.
  public init(
    tenant: String, owner: String? = nil, length: Int?, maxLength: Int, metadata: [UInt8] = [],
    protocolName: String, lifetime: TimeInterval
  ) {
    self.tenant = tenant
    self.owner = owner
    self.length = length
    self.maxLength = maxLength
    self.metadata = metadata
    self.protocolName = protocolName
    self.lifetime = lifetime
  }
}

/// Where an upload stands.
public enum UploadStatus: String, Sendable, Hashable {
  /// Taking bytes.
  case receiving
  /// Every byte is in; the body is being (or waits to be) processed.
  case completed
  /// The result of processing is recorded; repeated requests answer it.
  case processed
}

/// The outcome of processing a completed upload, kept so a repeated request answers the same.
public struct UploadResult: Sendable, Hashable {
  /// The attachment the upload became, when processing stored one.
  public var attachmentID: String?
  /// The answer given for it (status, headers worth repeating, body).
  public var response: StoredResponse

  /// A result with every field given.
  public init(attachmentID: String?, response: StoredResponse) {
    self.attachmentID = attachmentID
    self.response = response
  }
}

/// An upload as the store last committed it.
///
/// `description` and `debugDescription` leave out the metadata and owner: they may carry file
/// names or user ids, and a state may end up in a log line.
public struct UploadState: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
  /// Random public id, `upl_` + 26 base32 characters (128 bits).
  public var id: String
  /// The owning tenant.
  public var tenant: String
  /// The end-user subject, when one made the upload.
  public var owner: String?
  /// The protocol that made it.
  public var protocolName: String
  /// The opaque metadata given at creation. Never logged.
  public var metadata: [UInt8]
  /// The declared total length, or nil while deferred.
  public var length: Int?
  /// The most bytes the upload may hold.
  public var maxLength: Int
  /// Bytes received and durable: the offset the next append must start at.
  public var offset: Int
  /// Receiving, completed or processed.
  public var status: UploadStatus
  /// The recorded result, once processed.
  public var result: UploadResult?
  /// When the upload was created (whole seconds).
  public var createdAt: Date
  /// When it stops being visible and becomes eligible for `deleteExpired` (whole seconds).
  public var expiresAt: Date

  /// A state with every field given.
  public init(
    id: String, tenant: String, owner: String?, protocolName: String, metadata: [UInt8], length: Int?,
    maxLength: Int, offset: Int, status: UploadStatus, result: UploadResult?, createdAt: Date, expiresAt: Date
  ) {
    self.id = id
    self.tenant = tenant
    self.owner = owner
    self.protocolName = protocolName
    self.metadata = metadata
    self.length = length
    self.maxLength = maxLength
    self.offset = offset
    self.status = status
    self.result = result
    self.createdAt = createdAt
    self.expiresAt = expiresAt
  }

  /// The most bytes the upload can still take: up to its length when declared, else its maximum.
  public var limit: Int { length ?? maxLength }

  /// True once every byte is in (completed or processed).
  public var isComplete: Bool { status != .receiving }

  public var description: String {
    "upload \(id) (\(protocolName), \(status.rawValue), offset \(offset) of \(length.map(String.init) ?? "?"))"
  }

  public var debugDescription: String { description }
}

/// What `UploadStore.complete` hands back.
public enum UploadCompletion: Sendable {
  /// Every byte is in and this caller holds the processing claim: process `body`, then call
  /// `recordResult` (or `abandonProcessing` when the failure is worth a retry).
  case body(any UploadBody, UploadState)
  /// Processing already finished: answer with `state.result`.
  case processed(UploadState)
}

/// Bytes of a completed upload, readable in place (a read-only file mapping in the file store).
///
/// Keep the value alive while any pointer from `withUnsafeBytes` is in use; the memory is
/// released when the last reference goes. Safe to read from any thread.
public protocol UploadBody: AnyObject, Sendable {
  /// The number of bytes.
  var count: Int { get }
  /// Calls `body` with the bytes; the pointer is valid only during the call.
  func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result
  /// An open, read-only descriptor of the file whose first `count` bytes these are (valid while
  /// the body lives), nil for bytes in memory. Whole passes over a large upload (the sandbox's
  /// input, a video's kept source) copy from it in the kernel: read through the mapping, every
  /// page would join this process's resident set.
  var fileDescriptor: Int32? { get }
}

extension UploadBody {
  public var fileDescriptor: Int32? { nil }
}

/// What `UploadWriter.append` asks of its caller next.
public enum AppendOutcome: Sendable, Hashable {
  /// Buffered; keep reading.
  case buffered
  /// The buffer is full: pause reading and call `flush()` off the event loop before appending more.
  case flushNeeded
}
