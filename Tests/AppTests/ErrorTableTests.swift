import Foundation
import HTTP
import ImagePipeline
import MovieContainers
import Server
import Storage
import TestSupport
import Testing
import VideoPipeline

@testable import App
@testable import Uploads

@Suite struct ErrorTableTests {
  struct LibraryError: Error, CustomStringConvertible {
    var description: String { "tjDecompress2(): secret/path/IMG_0001.HEIC is broken" }
  }

  @Test(
    arguments: [
      (AppError.notFound, 404, "not_found", nil, nil),
      (AppError.methodNotAllowed(allow: ["GET", "HEAD"]), 405, "method_not_allowed", "GET, HEAD", nil),
      (AppError.notReady(reason: "EROFS"), 503, "not_ready", nil, "5"),
      (AppError.draining, 503, "draining", nil, "5"),
      (AppError.volumeFull(reason: "12 bytes free"), 503, "storage_full", nil, "5"),
    ] as [(AppError, Int, String, String?, String?)])
  func appErrorsMapToTheirStatusCodeAndHeaders(
    error: AppError, status: Int, code: String, allow: String?, retryAfter: String?
  ) {
    let entry = ErrorTable.publicError(for: error)
    #expect(entry.status == status)
    #expect(entry.code == code)
    #expect(entry.headers.first(name: "Allow") == allow)
    #expect(entry.headers.first(name: "Retry-After") == retryAfter)
  }

  @Test(
    arguments: [
      (
        StorageError(.unavailable, "S3 PUT blobs/ab/cd/…: connection refused"), 503, "storage_unavailable",
        "5"
      ),
      (StorageError(.busy, "all 8 PostgreSQL connections stayed in use"), 503, "storage_busy", "5"),
      (StorageError(.io, "S3 PUT: HTTP 403 AccessDenied"), 500, "storage_error", nil),
      (
        StorageError(.full, "pwrite(uploads/upl_x): No space left on device (errno 28)"), 507, "storage_full",
        "60"
      ),
      (
        StorageError(.full, "sqlite step: database or disk is full (13) in index.sqlite"), 507,
        "storage_full", "60"
      ),
    ] as [(StorageError, Int, String, String?)])
  func storageErrorsThatPassWithTimeAskTheClientToRetry(
    error: StorageError, status: Int, code: String, retryAfter: String?
  ) throws {
    let response = ErrorTable.response(for: error, requestID: "req-2", log: nil)
    #expect(response.status == status)
    #expect(response.headers.first(name: "Retry-After") == retryAfter)
    guard case .bytes(let body) = response.body else {
      Issue.record("no body")
      return
    }
    let text = String(decoding: body, as: UTF8.self)
    #expect(text.contains(#""code":"\#(code)""#))
    // What the store said stays in the log.
    #expect(
      !text.contains("S3") && !text.contains("PostgreSQL") && !text.contains("errno")
        && !text.contains("sqlite"))
  }

  @Test func everyPipelineCodeHasItsOwnRow() {
    // A new pipeline code without a row would reach clients as a 500.
    for code in PipelineError.allCodes where code != "internal" {
      #expect(ErrorTable.publicError(forPipelineCode: code).code == code, "\(code)")
    }
    let overdue = ErrorTable.publicError(forPipelineCode: "deadline_exceeded")
    #expect(overdue.status == 503 && overdue.headers.first(name: "Retry-After") == "5")
    let gone = ErrorTable.publicError(forPipelineCode: "cancelled")
    #expect(gone.status == 499 && gone.headers.first(name: "Retry-After") == nil)
  }

  @Test(arguments: [
    MovieRefusal.tooLargeBytes(1), .tooLong(301), .durationUnknown, .frameTooLarge(width: 8000, height: 4000),
    .frameRateTooHigh(500), .tooManyTracks(20), .noVideo, .externalReference, .timestampsBackwards,
    .truncated,
    .corrupt("x"),
  ])
  func everyVideoRefusalHasTheRowItsOwnCodeAndStatusSay(refusal: MovieRefusal) {
    // The CLI prints MovieRefusal's own code and status; the server's row must be the same.
    let row = ErrorTable.publicError(for: VideoError.refused(refusal))
    #expect(row.code == refusal.code && row.status == refusal.status, "\(refusal)")
  }

  @Test func unknownErrorsAreInternalAndTheirTextStaysInTheLog() throws {
    let logPath = ScratchSpace.file("attachd", suffix: "log")
    let log = EventLog(sink: try LogSink(appendingTo: logPath))
    let response = ErrorTable.response(for: LibraryError(), requestID: "req-1", log: log)
    #expect(response.status == 500)
    guard case .bytes(let body) = response.body else {
      Issue.record("no body")
      return
    }
    let text = String(decoding: body, as: UTF8.self)
    #expect(!text.contains("tjDecompress2"))
    #expect(!text.contains("IMG_0001"))
    log.flush()
    let logged = try String(contentsOfFile: logPath, encoding: .utf8)
    #expect(logged.contains("tjDecompress2"))
    #expect(logged.contains(#""request_id":"req-1""#))
    #expect(logged.contains(#""code":"internal_error""#))
  }

  @Test(arguments: HTTPParserError.Kind.allCases)
  func parserErrorsKeepTheStatusTheParserNames(kind: HTTPParserError.Kind) {
    let error = HTTPParserError(kind)
    let entry = ErrorTable.publicError(for: error)
    #expect(entry.status == error.status)
    #expect(!entry.code.isEmpty)
  }

  @Test(arguments: [
    (MultipartError.Kind.partTooLarge, 413, "payload_too_large"),
    (.bodyTooLarge, 413, "payload_too_large"),
    (.tooManyParts, 413, "too_many_parts"),
    (.partHeaderTooLarge, 431, "part_header_too_large"),
    (.missingFinalBoundary, 400, "malformed_multipart"),
    (.invalidBoundary, 400, "malformed_multipart"),
  ])
  func multipartErrorsMapToTheirStatusAndCode(kind: MultipartError.Kind, status: Int, code: String) {
    let entry = ErrorTable.publicError(for: MultipartError(kind))
    #expect(entry.status == status)
    #expect(entry.code == code)
  }

  @Test func everyTableRowHasADistinctMeaningPerCode() {
    // One code must never mean two statuses: clients switch on it.
    var statusByCode: [String: Int] = [:]
    let errors: [any Error] =
      HTTPParserError.Kind.allCases.map { HTTPParserError($0) as any Error }
      + MultipartError.Kind.allCases.map { MultipartError($0) as any Error }
      + [
        AppError.notFound, AppError.methodNotAllowed(allow: []), AppError.draining,
        AppError.notReady(reason: ""),
      ]
    for error in errors {
      let entry = ErrorTable.publicError(for: error)
      #expect(statusByCode[entry.code, default: entry.status] == entry.status, "\(entry.code)")
      statusByCode[entry.code] = entry.status
    }
  }

  @Test func problemBodiesAreProblemJSONWithAStableCode() throws {
    let response = ErrorTable.response(for: AppError.notFound, requestID: "abc\"1", log: nil)
    #expect(response.headers.first(name: "Content-Type") == "application/problem+json")
    guard case .bytes(let body) = response.body else {
      Issue.record("no body")
      return
    }
    let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    #expect(object["status"] as? Int == 404)
    #expect(object["code"] as? String == "not_found")
    #expect(object["title"] as? String == "Not found")
    #expect(object["instance"] as? String == "abc\"1")
  }
}

@Suite struct TusErrorTableTests {
  @Test(
    arguments: [
      (TusError.versionUnsupported, 412, "tus_version_unsupported", nil),
      (.invalidUploadLength, 400, "invalid_upload_length", nil),
      (.invalidUploadOffset, 400, "invalid_upload_offset", nil),
      (.invalidDeferLength, 400, "invalid_upload_defer_length", nil),
      (.uploadLengthRequired, 400, "upload_length_required", nil),
      (.concatenationUnsupported, 400, "tus_concatenation_unsupported", nil),
      (.invalidMetadata, 400, "invalid_upload_metadata", nil),
      (.invalidChecksum, 400, "invalid_upload_checksum", nil),
      (.checksumAlgorithmUnsupported, 400, "checksum_algorithm_unsupported", nil),
      (.checksumMismatch(offset: 7), 460, "checksum_mismatch", "7"),
      (.contentTypeRequired, 415, "tus_content_type", nil),
      (.offsetMismatch(offset: 8), 409, "upload_offset_mismatch", "8"),
      (.lengthMismatch, 400, "upload_length_mismatch", nil),
      (.lengthExceeded(offset: 9), 413, "payload_too_large", "9"),
      (.uploadIncomplete(offset: 10), 409, "upload_incomplete", "10"),
      (.processing, 409, "upload_in_progress", nil),
      (.preempted(offset: 11), 409, "upload_superseded", "11"),
    ] as [(TusError, Int, String, String?)])
  func tusErrorsMapToTheStatusTheSpecificationNamesAndCarryTheOffset(
    error: TusError, status: Int, code: String, offset: String?
  ) {
    let entry = ErrorTable.publicError(for: error)
    #expect(entry.status == status)
    #expect(entry.code == code)
    #expect(entry.headers.first(name: "Upload-Offset") == offset)
    if error == .versionUnsupported { #expect(entry.headers.first(name: "Tus-Version") == "1.0.0") }
  }

  @Test func uploadStateRowsShareCodesWithTheStorageRows() {
    let pairs: [(TusError, StorageError.Code)] = [
      (.offsetMismatch(offset: 0), .offsetMismatch), (.lengthMismatch, .lengthMismatch),
      (.lengthExceeded(offset: 0), .lengthExceeded), (.uploadIncomplete(offset: 0), .uploadIncomplete),
      (.preempted(offset: 0), .preempted), (.processing, .inProgress),
    ]
    for (tus, storage) in pairs {
      let a = ErrorTable.publicError(for: tus)
      let b = ErrorTable.publicError(for: StorageError(storage, "detail"))
      #expect(a.status == b.status && a.code == b.code && a.title == b.title, "\(storage)")
    }
  }
}
