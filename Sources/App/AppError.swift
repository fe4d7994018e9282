/// Errors the App module raises itself (routing, readiness).
public enum AppError: Error, Sendable, Equatable {
  /// No route has this path.
  case notFound
  /// The path exists, but not for this method.
  case methodNotAllowed(allow: [String])
  /// Storage cannot take writes; `reason` goes to the log only.
  case notReady(reason: String)
  /// The server is shutting down and takes no new work.
  case draining
  /// An upload without a body (400).
  case emptyUpload
  /// The upload body is larger than `uploads.maxBytes` (413).
  case uploadTooLarge
  /// A multipart upload without a usable boundary, or without any file part (400).
  case malformedUpload(String)
  /// The `Idempotency-Key` is held by a request still running (409).
  case idempotencyInProgress
  /// The `Idempotency-Key` was used before with a different body (422).
  case idempotencyMismatch
  /// An `Idempotency-Key` that is empty or longer than 255 characters (400).
  case invalidIdempotencyKey
  /// A `Range` outside the image of `size` bytes (416).
  case rangeNotSatisfiable(size: Int)
  /// A `profile` query parameter that names no model profile (400).
  case unknownProfile
  /// A resumable append whose `Content-Type` is not `application/partial-upload` (415).
  case unsupportedPatchType
  /// Bytes past the length a resumable upload declared (400; past its maximum is a 413).
  case uploadLengthExceeded
}
