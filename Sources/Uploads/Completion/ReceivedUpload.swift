import Crypto

/// A whole upload body, ready to process: its files and, for idempotency, its fingerprint.
public struct ReceivedUpload: Sendable {
  /// Who sent it.
  public var caller: UploadCaller
  /// The request that completed it (for logs).
  public var requestID: String
  /// Whether the body was `multipart/form-data` (its file parts are the files).
  public var multipart: Bool
  /// The files: the raw body, or the file parts of a multipart body.
  public var parts: [UploadedFile]
  /// The caller's `Idempotency-Key`, qualified by its user, when it sent one.
  var idempotencyKey: String?
  /// SHA-256 of the raw body, hashed while it arrived (multipart held in memory), else nil.
  var bodyDigest: String?
  /// The whole raw body when it was spooled (a multipart body's parts are ranges of it).
  var rawBody: UploadedFile?
  /// What names this upload's processing wherever and however often it runs — a completed
  /// resumable or tus upload's id, else the `Idempotency-Key` — qualified by its tenant; nil for
  /// a plain upload without a key (its retry is a new upload). The attachments made from it
  /// take ids derived from it and the file's place (`attachmentID(part:)`), so work redone
  /// after a node died between storing and answering finds what was stored, not a twin.
  public var identity: String?

  /// The id the attachment made from file `part` takes, when the upload has an identity.
  public func attachmentID(part: Int) -> String? {
    identity.map { SecureRandom.identifier(naming: "\($0)\u{0}part \(part)") }
  }

  /// The body's SHA-256 in hex (hashed now unless it was hashed while it arrived).
  func fingerprint() -> String {
    if let bodyDigest { return bodyDigest }
    let whole = rawBody ?? parts.first ?? UploadedFile([])
    return whole.withUnsafeBytes { Hex.encode(SHA256.hash($0)) }
  }
}
