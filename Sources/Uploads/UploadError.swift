/// Why the upload layer refused a request (rows in the App's error table).
public enum UploadError: Error, Sendable, Equatable {
  /// An upload without a body (400).
  case emptyUpload
  /// The upload body is larger than `uploads.maxBytes` (413).
  case uploadTooLarge
  /// A multipart upload without a usable boundary, or without any file part; a resumable
  /// request with fields it must not carry (400).
  case malformedUpload(String)
  /// The `Idempotency-Key` is held by a request still running (409).
  case idempotencyInProgress
  /// The `Idempotency-Key` was used before with a different body (422).
  case idempotencyMismatch
  /// An `Idempotency-Key` that is empty or longer than 255 characters (400).
  case invalidIdempotencyKey
  /// A resumable append whose `Content-Type` is not `application/partial-upload` (415).
  case unsupportedPatchType
  /// Bytes past the length a resumable upload declared (400; past its maximum is a 413).
  case uploadLengthExceeded
  /// No such upload for this caller (404): another tenant's, another user's and an expired one
  /// look the same.
  case notFound
}
