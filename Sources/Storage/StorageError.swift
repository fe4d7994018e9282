/// An error from the storage layer; `description` is for logs only, never for clients.
public struct StorageError: Error, Sendable, CustomStringConvertible {
  /// What kind of failure this is; the App maps codes to HTTP statuses.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Hashable, Sendable {
      case notFound, io, database, busy, corrupt, invalidArgument, conflict, unavailable
      case offsetMismatch, lengthExceeded, lengthMismatch, uploadCompleted, uploadIncomplete, preempted
      case inProgress, full
    }
    private let base: Base

    /// The blob or row does not exist.
    public static let notFound = Code(base: .notFound)
    /// A file-system call failed (permissions, an I/O error, …; a full disk is `full`).
    public static let io = Code(base: .io)
    /// The index database reported an error.
    public static let database = Code(base: .database)
    /// The index database stayed locked past the busy timeout, a statement ran past its
    /// timeout, or every pooled connection stayed in use past the pool's wait timeout.
    public static let busy = Code(base: .busy)
    /// Stored data is not what it should be (bad hash, truncated blob).
    public static let corrupt = Code(base: .corrupt)
    /// The caller passed a value the store cannot accept.
    public static let invalidArgument = Code(base: .invalidArgument)
    /// A unique key already exists.
    public static let conflict = Code(base: .conflict)
    /// A storage service (object store or index server) could not be reached, or answered with a
    /// server error after every retry: temporary, worth a 503 with `Retry-After`.
    public static let unavailable = Code(base: .unavailable)
    /// An append named another offset than the upload's; `offset` is the upload's.
    public static let offsetMismatch = Code(base: .offsetMismatch)
    /// Bytes past the upload's declared length or its maximum; `offset` is the upload's.
    public static let lengthExceeded = Code(base: .lengthExceeded)
    /// A length that contradicts the one declared, or is below the bytes already received.
    public static let lengthMismatch = Code(base: .lengthMismatch)
    /// The upload is complete: it takes no more bytes and no new length.
    public static let uploadCompleted = Code(base: .uploadCompleted)
    /// Completion was asked before every declared byte arrived; `offset` is the upload's.
    public static let uploadIncomplete = Code(base: .uploadIncomplete)
    /// This upload writer was taken over by a newer request; what it had received is kept.
    public static let preempted = Code(base: .preempted)
    /// Another request is processing the completed upload (or holds it past the takeover wait).
    public static let inProgress = Code(base: .inProgress)
    /// The volume holding the data has no space (or no quota) left: `ENOSPC`, `EDQUOT`,
    /// `SQLITE_FULL`. Nothing the write was part of was acknowledged; freeing space is the cure.
    public static let full = Code(base: .full)

    public var description: String { base.rawValue }
  }

  /// The kind of failure.
  public let code: Code
  /// Details for the log: the failing call, errno, SQLite's or PostgreSQL's message (never a
  /// password). Never sent to clients.
  public let detail: String
  /// The upload's acknowledged offset, for the upload errors a client is answered with it
  /// (`offsetMismatch`, `lengthExceeded`, `uploadIncomplete`, `preempted`); nil otherwise.
  public let offset: Int?

  /// An error of `code` with log `detail` and, for upload errors, the upload's `offset`.
  public init(_ code: Code, _ detail: String, offset: Int? = nil) {
    self.code = code
    self.detail = detail
    self.offset = offset
  }

  public var description: String { "storage \(code): \(detail)" }

  /// Throws `.invalidArgument` with `detail` unless `condition` holds: one rule of a `validate()`.
  static func require(_ condition: Bool, _ detail: @autoclosure () -> String) throws {
    if !condition { throw StorageError(.invalidArgument, detail()) }
  }
}
