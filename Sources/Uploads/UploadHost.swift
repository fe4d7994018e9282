import HTTP
import Server
import Storage

/// What the App gives the upload layer that does not depend on who uploads: its one error
/// table, its counters and its URL space. Every call is quick and may come from any thread.
public protocol UploadHost: Sendable {
  /// The public face of `error` (the App's error table).
  func publicError(for error: any Error) -> PublicError

  /// `entry` as a problem+json answer to request `requestID`: counted by its code, and, for a
  /// 5xx, `error`'s full description logged (never sent).
  func problemResponse(_ entry: PublicError, for error: any Error, requestID: String) -> HTTPResponse

  /// Counts body bytes received by upload requests.
  func bodyBytesReceived(_ count: Int)

  /// The path of attachment `id` (`Content-Location` of a tus upload that became one).
  func attachmentPath(_ id: String) -> String

  /// Logs a warning about an upload (never its bytes or metadata).
  func warning(_ message: String, fields: [(String, String)])

  /// Logs that storage failed to keep something the answer did not depend on (a recorded
  /// answer, a released claim): the answer still goes out.
  func storageFailed(_ message: String, requestID: String, error: any Error)
}

/// Who uploads, as far as uploads need to know, and where the caller's completed uploads go.
/// The App makes one per request from its authenticated caller.
public struct UploadCaller: Sendable {
  /// The tenant that owns what this caller uploads.
  public var tenant: String
  /// The end user of an upload token; nil for an API key. An upload answers only the tenant
  /// and user that created it.
  public var user: String?
  /// The most bytes this caller may send in one upload: the server's cap, or less for a token.
  public var maxBytes: Int
  /// What a body over `maxBytes` is refused with when that is below the server's cap (the
  /// token's own limit); past the server's cap it is `UploadError.uploadTooLarge`.
  public var overMaxBytes: any Error
  /// Where this caller's completed uploads go.
  public var destination: any UploadDestination

  public init(
    tenant: String, user: String?, maxBytes: Int, overMaxBytes: any Error, destination: any UploadDestination
  ) {
    self.tenant = tenant
    self.user = user
    self.maxBytes = maxBytes
    self.overMaxBytes = overMaxBytes
    self.destination = destination
  }

  /// The error a body over `limit` gets, given the server's own cap.
  func overLimit(_ limit: Int, serverLimit: Int) -> any Error {
    limit < serverLimit ? overMaxBytes : UploadError.uploadTooLarge
  }
}

/// The App behind one caller's uploads: the pipeline and the store, and the caller's cap on
/// uploads in flight.
public protocol UploadDestination: Sendable {
  /// Runs the images of a complete upload through the pipeline into the store, and answers
  /// what a plain upload of the same bytes answers. On a CPU worker; stops early (storing
  /// nothing) once `cancellation` fires.
  func process(_ upload: ReceivedUpload, cancellation: RequestCancellation) -> UploadAnswer

  /// The record of attachment `id` as the caller's `GET …/meta` would answer it (a fresh signed
  /// link), or the 404 of one that is gone. On a worker.
  func record(ofAttachment id: String, requestID: String) -> HTTPResponse

  /// The caller's slot among its uploads in flight, not yet taken. The request holds it
  /// (`RequestContext.hold`), so it goes back when the request is over, whoever took it.
  func uploadSlot() -> any UploadSlot
}

/// One upload's place under its caller's cap on uploads in flight.
public protocol UploadSlot: RequestResource {
  /// Takes the place; the error to refuse the upload with when the caller is at its cap.
  /// `release` gives back a place that was taken (and does nothing otherwise).
  func acquire() -> (any Error)?
}
