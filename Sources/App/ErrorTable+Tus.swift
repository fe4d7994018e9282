import HTTP
import Uploads

extension ErrorTable {
  /// tus 1.0 refusals. Statuses are the ones the tus specification names (412, 415, 409, 460,
  /// 413, 400); the problem body and a stable `code` come on top, as for every error here. The
  /// upload-state rows share code and title with the `StorageError` rows the IETF adapter
  /// answers, and add the `Upload-Offset` a tus client resumes from.
  static func publicError(for error: TusError) -> PublicError {
    func offset(_ value: Int) -> HTTPHeaders { ["Upload-Offset": String(value)] }
    switch error {
    case .versionUnsupported:
      return PublicError(
        status: 412, code: "tus_version_unsupported", title: "Tus-Resumable must be 1.0.0",
        headers: ["Tus-Version": TusProtocol.version])
    case .invalidUploadLength:
      return PublicError(
        status: 400, code: "invalid_upload_length", title: "Upload-Length must be a non-negative integer")
    case .invalidUploadOffset:
      return PublicError(
        status: 400, code: "invalid_upload_offset", title: "Upload-Offset must be a non-negative integer")
    case .invalidDeferLength:
      return PublicError(
        status: 400, code: "invalid_upload_defer_length", title: "Upload-Defer-Length must be 1")
    case .uploadLengthRequired:
      return PublicError(
        status: 400, code: "upload_length_required",
        title: "Send either Upload-Length or Upload-Defer-Length: 1")
    case .concatenationUnsupported:
      return PublicError(
        status: 400, code: "tus_concatenation_unsupported",
        title: "Upload-Concat is not supported (see Tus-Extension)")
    case .invalidMetadata:
      return PublicError(
        status: 400, code: "invalid_upload_metadata",
        title: "Upload-Metadata must be comma-separated unique keys with base64 values")
    case .invalidChecksum:
      return PublicError(
        status: 400, code: "invalid_upload_checksum",
        title: "Upload-Checksum must be an algorithm and its base64 digest")
    case .checksumAlgorithmUnsupported:
      return PublicError(
        status: 400, code: "checksum_algorithm_unsupported",
        title: "Upload-Checksum algorithm not supported (see Tus-Checksum-Algorithm)")
    case .checksumMismatch(let value):
      return PublicError(
        status: 460, code: "checksum_mismatch", title: "The chunk does not match its checksum",
        headers: offset(value))
    case .contentTypeRequired:
      return PublicError(
        status: 415, code: "tus_content_type",
        title: "Content-Type must be application/offset+octet-stream")
    case .offsetMismatch(let value):
      return PublicError(
        status: 409, code: "upload_offset_mismatch", title: "The offset is not the upload's offset",
        headers: offset(value))
    case .lengthMismatch:
      return PublicError(
        status: 400, code: "upload_length_mismatch", title: "The upload length is inconsistent")
    case .lengthExceeded(let value):
      return PublicError(
        status: 413, code: "payload_too_large", title: "Upload too large",
        headers: offset(value))
    case .uploadIncomplete(let value):
      return PublicError(
        status: 409, code: "upload_incomplete", title: "The upload is missing bytes",
        headers: offset(value))
    case .processing:
      return PublicError(
        status: 409, code: "upload_in_progress", title: "Another request is working on the upload",
        headers: ["Retry-After": "1"])
    case .preempted(let value):
      return PublicError(
        status: 409, code: "upload_superseded", title: "A newer request took the upload over",
        headers: offset(value))
    }
  }
}
