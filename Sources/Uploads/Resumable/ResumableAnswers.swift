import Foundation
import HTTP
import Server
import Storage

/// The answers of one resumable-upload request, in the fields and shapes of its interop version
/// (`ResumableVersion` says which).
struct ResumableAnswers: Sendable {
  let version: ResumableVersion
  let uploads: Uploads
  let requestID: String

  /// Where an upload stands, as far as an answer tells it.
  struct Position: Sendable {
    var offset: Int
    var complete: Bool
  }

  /// `response` with this version's fields added: the echoed interop version always; the
  /// offset and completeness per the version's rules when `position` is known (see
  /// `ResumableVersion.offsetOnFinalResponses`). `offsetAlways` forces `Upload-Offset` (a 409,
  /// `HEAD`).
  func decorate(_ response: HTTPResponse, position: Position?, offsetAlways: Bool = false) -> HTTPResponse {
    var response = response
    response.headers.replaceOrAdd(name: "Upload-Draft-Interop-Version", value: String(version.number))
    guard let position else { return response }
    response.headers.replaceOrAdd(
      name: version.completenessField, value: version.completenessValue(position.complete))
    if offsetAlways || version.offsetOnFinalResponses {
      response.headers.replaceOrAdd(name: "Upload-Offset", value: String(position.offset))
    }
    return response
  }

  /// The `Upload-Limit` value for an upload that may grow to `maxSize` bytes and lives
  /// `remaining` more seconds (nil for versions without the field).
  func limit(maxSize: Int, remaining: Int) -> String? {
    guard version.hasUploadLimit else { return nil }
    return StructuredField.dictionary([
      (key: "max-size", value: maxSize), (key: version.lifetimeLimitKey, value: max(0, remaining)),
    ])
  }

  /// `Upload-Limit` for `upload` now.
  func limit(_ upload: UploadState) -> String? {
    limit(
      maxSize: upload.maxLength, remaining: Int(upload.expiresAt.timeIntervalSince(Date()).rounded(.down)))
  }

  /// The problem answer for `error`, dressed as this version spells it: problem types where it
  /// defines them, `Upload-Offset` on a 409, the position when known. `provided` is the offset
  /// the request named (for the mismatching-offset members).
  func problem(_ error: any Error, position: Position?, provided: Int? = nil) -> HTTPResponse {
    var entry = uploads.host.publicError(for: error)
    var offsetAlways = false
    if let storage = error as? StorageError {
      switch storage.code {
      case .offsetMismatch:
        offsetAlways = true
        if version.hasUploadProblemTypes {
          entry.type = ResumableVersion.mismatchingOffsetType
          entry.integers = [.init("expected-offset", storage.offset ?? position?.offset ?? 0)]
          if let provided { entry.integers.append(.init("provided-offset", provided)) }
        }
      case .uploadCompleted where version.hasUploadProblemTypes:
        entry.type = ResumableVersion.completedUploadType
      case .lengthMismatch where version.hasLengthProblemType:
        entry.type = ResumableVersion.inconsistentLengthType
      default: break
      }
    }
    let response = uploads.host.problemResponse(entry, for: error, requestID: requestID)
    return decorate(response, position: position, offsetAlways: offsetAlways)
  }

  /// 201 (or 204 from version 7) acknowledging bytes that did not complete the upload.
  func acknowledged(_ upload: UploadState, creation location: String?) -> HTTPResponse {
    var headers: HTTPHeaders = ["Cache-Control": "no-store"]
    if let location { headers.add(name: "Location", value: location) }
    if location != nil, let limit = limit(upload) {
      headers.add(name: "Upload-Limit", value: limit)
    }
    let status = location != nil ? 201 : version.incompleteAppendStatus
    return decorate(
      HTTPResponse(status: status, headers: headers),
      position: Position(offset: upload.offset, complete: false))
  }

  /// The answer of a completed upload's processing (what a plain upload answers), with the
  /// completeness a client of this version checks.
  func completed(_ response: HTTPResponse, length: Int) -> HTTPResponse {
    decorate(response, position: Position(offset: length, complete: true))
  }

  /// Offset retrieval: 204 with offset, completeness, length and limits, never cached.
  func offset(_ upload: UploadState) -> HTTPResponse {
    var headers: HTTPHeaders = ["Cache-Control": "no-store"]
    if version.hasUploadLength, let length = upload.length {
      headers.add(name: "Upload-Length", value: String(length))
    }
    if !upload.isComplete, let limit = limit(upload) { headers.add(name: "Upload-Limit", value: limit) }
    // What a processed upload became, as tus's HEAD says it: a client that lost the final
    // answer learns its attachment here (at interop 6 and 7 it cannot ask by appending again).
    if let attachment = upload.result?.attachmentID {
      headers.add(name: "Content-Location", value: uploads.host.attachmentPath(attachment))
    }
    return decorate(
      HTTPResponse(status: 204, headers: headers),
      position: Position(
        offset: upload.isComplete ? upload.length ?? upload.offset : upload.offset,
        complete: upload.isComplete),
      offsetAlways: true)
  }
}
