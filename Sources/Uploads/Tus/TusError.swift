/// Why a tus 1.0 request was refused (rows in `ErrorTable+Tus.swift`).
///
/// The offsets some cases carry go back to the client in an `Upload-Offset` header, so that it
/// can resume from where the server really is.
public enum TusError: Error, Sendable, Equatable {
  /// `Tus-Resumable` missing or not `1.0.0` on a request other than OPTIONS (412, with
  /// `Tus-Version`).
  case versionUnsupported
  /// `Upload-Length` that is not one non-negative decimal integer (400).
  case invalidUploadLength
  /// `Upload-Offset` missing from a PATCH, or not one non-negative decimal integer (400).
  case invalidUploadOffset
  /// `Upload-Defer-Length` with a value other than `1` (400).
  case invalidDeferLength
  /// A creation with neither `Upload-Length` nor `Upload-Defer-Length: 1`, or with both (400).
  case uploadLengthRequired
  /// `Upload-Concat` on a creation: the concatenation extension is not offered (400), so a
  /// partial upload is never mistaken for a whole image.
  case concatenationUnsupported
  /// `Upload-Metadata` that breaks the grammar (keys, base64 values, duplicates) or is too long
  /// (400). Its value is never logged.
  case invalidMetadata
  /// `Upload-Checksum` that is not `<algorithm> <base64 digest>` of the algorithm's length, or a
  /// promised checksum trailer that never came (400).
  case invalidChecksum
  /// `Upload-Checksum` names an algorithm not in `Tus-Checksum-Algorithm` (400).
  case checksumAlgorithmUnsupported
  /// The chunk's digest is not the one sent; the chunk was discarded (460).
  case checksumMismatch(offset: Int)
  /// A body without `Content-Type: application/offset+octet-stream` (415).
  case contentTypeRequired
  /// `Upload-Offset` is not where the upload stands (409).
  case offsetMismatch(offset: Int)
  /// `Upload-Length` contradicts the length declared before, or is below the bytes received (400).
  case lengthMismatch
  /// Bytes past the upload's declared length (413 `payload_too_large`, as a plain body over
  /// its limit; tusd answers 413 too).
  case lengthExceeded(offset: Int)
  /// A GET of an upload that has not received all its bytes (409).
  case uploadIncomplete(offset: Int)
  /// Another request is processing the completed upload right now (409, `Retry-After`).
  case processing
  /// Another request took the upload over while this one was sending (409): the bytes it sent
  /// before are kept, and the client resumes from a HEAD.
  case preempted(offset: Int)
}
