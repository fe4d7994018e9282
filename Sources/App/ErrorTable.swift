import HTTP
import ImagePipeline
import MovieContainers
import Server
import Storage
import Uploads
import VideoPipeline

/// The one place where errors become HTTP statuses (STYLE.md, "Errors").
///
/// Every module error that can reach a client has a row here. The public title is fixed per
/// row; the error's own description (library strings, paths, errno) goes to the event log
/// with the request id, never into the response.
public enum ErrorTable {
  /// Seconds a client is asked to wait after a 503.
  public static let retryAfterSeconds = 5
  /// Seconds a client is asked to wait after a 507: someone has to free space first, which
  /// takes minutes rather than seconds, and a phone retrying every 5 s only spends its battery.
  public static let storageFullRetryAfterSeconds = 60
  /// The code of a full volume (507 to an upload, 503 from `/readyz`).
  public static let storageFullCode = "storage_full"

  /// The public face of `error`; anything without a row is a 500 `internal_error`.
  public static func publicError(for error: any Error) -> PublicError {
    switch error {
    case let error as AppError: publicError(for: error)
    case let error as UploadError: publicError(for: error)
    case let error as HTTPParserError: publicError(for: error)
    case let error as MultipartError: publicError(for: error)
    case let error as ServerCondition: publicError(for: error)
    case let error as PipelineError: publicError(for: error)
    case let error as VideoError: publicError(for: error)
    case let error as StorageError: publicError(for: error)
    case let error as AccessError: error.publicError
    case let error as TokenError: publicError(for: error)
    case let error as QuotaError: publicError(for: error)
    case let error as TusError: publicError(for: error)
    default: internalError
    }
  }

  // Parser errors the server meets arrive as `ServerCondition.malformedRequest` (ErrorTable+Server.swift).
  static func publicError(for error: HTTPParserError) -> PublicError {
    switch error.status {
    case 414: PublicError(status: 414, code: "uri_too_long", title: "Request line too long")
    case 431: PublicError(status: 431, code: "header_too_large", title: "Request header fields too large")
    case 501: PublicError(status: 501, code: "not_implemented", title: "Transfer coding not supported")
    case 505:
      PublicError(status: 505, code: "http_version_not_supported", title: "HTTP version not supported")
    default: PublicError(status: 400, code: "malformed_request", title: "Malformed request")
    }
  }

  static func publicError(for error: MultipartError) -> PublicError {
    switch error.kind {
    case .partTooLarge, .bodyTooLarge:
      PublicError(status: 413, code: "payload_too_large", title: "Upload too large")
    case .tooManyParts:
      PublicError(status: 413, code: "too_many_parts", title: "Too many parts in the upload")
    case .partHeaderTooLarge, .tooManyPartHeaderFields:
      PublicError(status: 431, code: "part_header_too_large", title: "Part header too large")
    case .invalidBoundary, .invalidDelimiter, .invalidPartHeader, .missingFinalBoundary:
      PublicError(status: 400, code: "malformed_multipart", title: "Malformed multipart body")
    }
  }

  static func publicError(for error: PipelineError) -> PublicError {
    publicError(for: error.kind)
  }

  /// A video refused by its header check (each limit its own code), one that broke while it was
  /// decoded, or one whose frames the still pipeline refused.
  static func publicError(for error: VideoError) -> PublicError {
    switch error {
    case .refused(let refusal): publicError(for: refusal)
    case .undecodable: PublicError(status: 422, code: "corrupt", title: "The video cannot be decoded")
    case .pipeline(let error): publicError(for: error.kind)
    }
  }

  // Exhaustive on purpose, as the pipeline's: a new refusal does not compile until it has a row.
  // The codes and statuses are MovieRefusal's own (the CLI prints them); a test keeps them equal.
  static func publicError(for refusal: MovieRefusal) -> PublicError {
    switch refusal {
    case .tooLargeBytes:
      PublicError(status: 413, code: "video_too_large_bytes", title: "Video file too large")
    case .tooLong: PublicError(status: 413, code: "video_too_long", title: "Video too long")
    case .durationUnknown:
      PublicError(
        status: 422, code: "video_duration_unknown", title: "The video's duration is not in its header")
    case .frameTooLarge:
      PublicError(status: 413, code: "video_frame_too_large", title: "Video frames too large")
    case .frameRateTooHigh:
      PublicError(status: 413, code: "video_frame_rate_too_high", title: "Video frame rate too high")
    case .tooManyTracks:
      PublicError(status: 413, code: "video_too_many_tracks", title: "Video has too many tracks")
    case .noVideo: PublicError(status: 415, code: "video_no_video_track", title: "No supported video track")
    case .externalReference:
      PublicError(status: 422, code: "video_external_reference", title: "The video refers to another file")
    case .timestampsBackwards:
      PublicError(
        status: 422, code: "video_timestamps_backwards", title: "The video's timestamps run backwards")
    case .truncated: PublicError(status: 422, code: "truncated", title: "The video is truncated")
    case .corrupt: PublicError(status: 422, code: "corrupt", title: "The video cannot be decoded")
    }
  }

  /// The row for a pipeline code as it is logged or stored; an unknown code is `internal_error`.
  static func publicError(forPipelineCode code: String) -> PublicError {
    PipelineError.Kind(rawValue: code).map(publicError(for:)) ?? internalError
  }

  // Exhaustive on purpose: a new pipeline kind does not compile until it has a row here.
  static func publicError(for kind: PipelineError.Kind) -> PublicError {
    switch kind {
    case .empty: PublicError(status: 400, code: "empty", title: "The upload is empty")
    case .unsupportedFormat:
      PublicError(status: 415, code: "unsupported_format", title: "Not a supported image format")
    case .animatedUnsupported:
      PublicError(status: 415, code: "animated_unsupported", title: "Animated images are not supported")
    case .unsupportedJPEGPrecision:
      PublicError(
        status: 422, code: "unsupported_jpeg_precision", title: "JPEG sample precision not supported")
    case .tooLargeBytes: PublicError(status: 413, code: "too_large_bytes", title: "Image file too large")
    case .pixelLimit: PublicError(status: 413, code: "pixel_limit", title: "Image has too many pixels")
    case .dimensionLimit:
      PublicError(status: 413, code: "dimension_limit", title: "Image is too wide or tall")
    case .tooManyItems: PublicError(status: 413, code: "too_many_items", title: "Image has too many parts")
    case .metadataTooLarge:
      PublicError(status: 413, code: "metadata_too_large", title: "Image metadata too large")
    case .corrupt: PublicError(status: 422, code: "corrupt", title: "The image cannot be decoded")
    case .truncated: PublicError(status: 422, code: "truncated", title: "The image is truncated")
    case .memoryBudget:
      retryLater("memory_budget", "Server busy with other images")
    case .deadlineExceeded:
      retryLater("deadline_exceeded", "The image took too long to process")
    // The client has hung up and will not read this; the status (nginx's "client closed
    // request") is for the access log and the metrics.
    case .cancelled: PublicError(status: 499, code: "cancelled", title: "Client closed the request")
    // The image itself asks too much of its decoder: retrying will not help.
    case .decoderMemoryLimit:
      PublicError(
        status: 413, code: "decoder_memory_limit", title: "The image needs more memory to decode than allowed"
      )
    case .sandboxUnavailable:
      retryLater("sandbox_unavailable", "The image decoder is restarting", after: 1)
    // The one 500 code: a pipeline failure reads like any other server fault.
    case .internal: internalError
    }
  }

  /// Storage failures, and the upload engine's refusals (which an upload protocol may dress
  /// in its own headers and problem types: `ResumableVersion`).
  static func publicError(for error: StorageError) -> PublicError {
    switch error.code {
    case .busy:
      retryLater("storage_busy", "Storage busy")
    case .unavailable:
      retryLater("storage_unavailable", "Storage unavailable")
    // RFC 4918's Insufficient Storage: the server, not the request, lacks the space. Nothing
    // of this request was acknowledged; what was acknowledged before (an upload's offset) stays.
    case .full:
      PublicError(
        status: 507, code: storageFullCode, title: "The server's storage is full",
        headers: ["Retry-After": String(storageFullRetryAfterSeconds)])
    // Another tenant's upload, an expired one and a malformed id look the same.
    case .notFound: PublicError(status: 404, code: "not_found", title: "Not found")
    case .offsetMismatch:
      PublicError(status: 409, code: "upload_offset_mismatch", title: "The offset is not the upload's offset")
    case .uploadCompleted:
      PublicError(status: 400, code: "upload_completed", title: "The upload is already complete")
    case .lengthMismatch:
      PublicError(status: 400, code: "upload_length_mismatch", title: "The upload length is inconsistent")
    case .lengthExceeded:
      PublicError(status: 413, code: "payload_too_large", title: "Upload too large")
    case .uploadIncomplete:
      PublicError(status: 409, code: "upload_incomplete", title: "The upload is missing bytes")
    // The request that was taken over: its client has gone (it started a new one).
    case .preempted:
      PublicError(status: 409, code: "upload_superseded", title: "A newer request took the upload over")
    case .inProgress:
      PublicError(
        status: 409, code: "upload_in_progress", title: "Another request is working on the upload",
        headers: ["Retry-After": "1"])
    default:
      PublicError(status: 500, code: "storage_error", title: "Storage failed")
    }
  }

  static func publicError(for error: AppError) -> PublicError {
    switch error {
    case .rangeNotSatisfiable(let size):
      PublicError(
        status: 416, code: "range_not_satisfiable", title: "Range not satisfiable",
        headers: ["Content-Range": "bytes */\(size)"])
    case .unknownProfile:
      PublicError(
        status: 400, code: "unknown_profile",
        title: "Unknown profile (one of: \(ModelProfile.allCases.map(\.rawValue).joined(separator: ", ")))")
    case .videoProcessing:
      retryLater("video_processing", "The video's MP4 is still being made")
    case .videoRenditionFailed:
      PublicError(status: 422, code: "rendition_failed", title: "The video's MP4 could not be made")
    case .invalidFrame:
      PublicError(status: 400, code: "invalid_frame", title: "The frame parameter is a number from 1")
    case .notFound:
      PublicError(status: 404, code: "not_found", title: "Not found")
    case .methodNotAllowed(let allow):
      PublicError(
        status: 405, code: "method_not_allowed", title: "Method not allowed",
        headers: ["Allow": allow.joined(separator: ", ")])
    case .notReady:
      retryLater("not_ready", "Storage is not writable")
    case .volumeFull:
      retryLater(storageFullCode, "The data directory's volume is full")
    case .draining:
      retryLater("draining", "Server is shutting down")
    }
  }

  static func publicError(for error: UploadError) -> PublicError {
    switch error {
    case .emptyUpload:
      PublicError(status: 400, code: "empty", title: "The upload is empty")
    case .uploadTooLarge:
      PublicError(status: 413, code: "payload_too_large", title: "Upload too large")
    case .malformedUpload:
      PublicError(status: 400, code: "malformed_upload", title: "Malformed upload")
    case .idempotencyInProgress:
      PublicError(
        status: 409, code: "idempotency_in_progress",
        title: "A request with this Idempotency-Key is still running",
        headers: ["Retry-After": "1"])
    case .idempotencyMismatch:
      PublicError(
        status: 422, code: "idempotency_mismatch",
        title: "This Idempotency-Key was used with a different request")
    case .invalidIdempotencyKey:
      PublicError(
        status: 400, code: "invalid_idempotency_key", title: "Idempotency-Key must be 1…255 characters")
    case .unsupportedPatchType:
      PublicError(
        status: 415, code: "unsupported_patch_type", title: "Appends are application/partial-upload")
    case .uploadLengthExceeded:
      PublicError(status: 400, code: "upload_length_exceeded", title: "More bytes than the upload's length")
    case .notFound:
      PublicError(status: 404, code: "not_found", title: "Not found")
    }
  }

  /// Upload-token refusals. 401 with `WWW-Authenticate: Bearer error="invalid_token"`
  /// (RFC 6750 §3.1) whenever the token itself is bad — malformed, unsigned, unverifiable,
  /// outside its validity window — so that a client fetches a new one from its backend.
  /// 403 when the token is good but does not allow this: a missing scope (with
  /// `error="insufficient_scope"` and the scope needed), or its `max_files`/`max_bytes` used up,
  /// which no retry and no waiting will change (not 429: nothing refills a token's allowance).
  static func publicError(for error: TokenError) -> PublicError {
    let challenge: HTTPHeaders = ["WWW-Authenticate": #"Bearer error="invalid_token""#]
    func invalid(_ code: String, _ title: String) -> PublicError {
      PublicError(status: 401, code: code, title: title, headers: challenge)
    }
    switch error {
    case .malformed: return invalid("token_malformed", "The upload token is malformed")
    case .algorithmNone: return invalid("token_alg_none", "Unsigned upload tokens (alg none) are refused")
    case .algorithmUnsupported:
      return invalid("token_alg_unsupported", "The upload token's alg is not supported")
    case .algorithmMismatch:
      return invalid("token_alg_mismatch", "The upload token's alg is not the one of its issuer's key")
    case .issuerUnknown: return invalid("token_issuer_unknown", "The upload token's issuer is not known")
    case .keyMismatch:
      return invalid("token_key_mismatch", "The upload token's kid belongs to another issuer")
    case .signatureInvalid:
      return invalid("token_signature_invalid", "The upload token's signature is not valid")
    case .claimsInvalid: return invalid("token_claims_invalid", "The upload token lacks a required claim")
    case .audienceInvalid:
      return invalid("token_audience_invalid", "The upload token is meant for another audience")
    case .expired: return invalid("token_expired", "The upload token has expired")
    case .notYetValid: return invalid("token_not_yet_valid", "The upload token is not valid yet")
    case .issuedInFuture: return invalid("token_clock_skew", "The upload token was issued in the future")
    case .lifetimeTooLong:
      return invalid("token_lifetime_too_long", "The upload token lives longer than allowed")
    case .insufficientScope(let scope):
      return PublicError(
        status: 403, code: "token_insufficient_scope",
        title: "The upload token lacks the \(scope.rawValue) scope",
        headers: ["WWW-Authenticate": #"Bearer error="insufficient_scope", scope="\#(scope.rawValue)""#])
    case .maxFilesUsed:
      return PublicError(
        status: 403, code: "token_max_files", title: "The upload token's max_files are used up")
    case .maxBytesExceeded:
      return PublicError(
        status: 403, code: "token_max_bytes", title: "The upload would pass the token's max_bytes")
    }
  }

  /// An end user's daily quota: 429 with `Retry-After` until the quota's UTC day ends, since
  /// waiting does help here.
  static func publicError(for error: QuotaError) -> PublicError {
    switch error {
    case .dailyFiles(let seconds):
      PublicError(
        status: 429, code: "daily_quota_files", title: "The user's daily file quota is used up",
        headers: ["Retry-After": String(seconds)])
    case .dailyBytes(let seconds):
      PublicError(
        status: 429, code: "daily_quota_bytes", title: "The user's daily byte quota is used up",
        headers: ["Retry-After": String(seconds)])
    }
  }

  /// A 503 the client may retry after `seconds` (`Retry-After`): load, a backend or a restart.
  static func retryLater(_ code: String, _ title: String, after seconds: Int = retryAfterSeconds)
    -> PublicError
  {
    PublicError(status: 503, code: code, title: title, headers: ["Retry-After": String(seconds)])
  }

  /// The row for errors no other row claims.
  public static let internalError = PublicError(status: 500, code: "internal_error", title: "Internal error")

  /// The problem+json response for `error`. Errors that are not the client's doing (5xx and
  /// unknown errors) are logged with their full description and the request id.
  public static func response(for error: any Error, requestID: String, log: EventLog?) -> HTTPResponse {
    problemResponse(
      publicError(for: error), for: error, requestID: requestID, log: log, metrics: nil, volume: nil)
  }

  /// The problem+json response for `entry`, the row of `error` (or a row an upload protocol
  /// dressed): counted (`countRejection`), and, for a 5xx, `error`'s full description logged
  /// with the request id (never sent).
  static func problemResponse(
    _ entry: PublicError, for error: any Error, requestID: String, log: EventLog?, metrics: AttachdMetrics?,
    volume: VolumeSpace?
  ) -> HTTPResponse {
    if entry.status >= 500 {
      log?.error("request failed", requestID: requestID, code: entry.code, detail: String(describing: error))
    }
    countRejection(entry, metrics: metrics, volume: volume)
    return problemResponse(entry, requestID: requestID)
  }

  /// Counts a refusal by its code in `metrics`; a full volume is also told to `volume`, so that
  /// `/readyz` says so at once.
  static func countRejection(_ entry: PublicError, metrics: AttachdMetrics?, volume: VolumeSpace?) {
    metrics?.recordRejection(code: entry.code)
    if entry.code == storageFullCode { volume?.noteFull() }
  }

  /// An `application/problem+json` (RFC 9457) response for a table row; the request id is
  /// the problem's `instance`.
  public static func problemResponse(_ entry: PublicError, requestID: String) -> HTTPResponse {
    var problem = ProblemDetails(
      status: entry.status, code: entry.code, title: entry.title, instance: requestID)
    problem.type = entry.type
    problem.integers = entry.integers
    var headers = entry.headers
    headers.add(name: "Content-Type", value: ProblemDetails.contentType)
    headers.add(name: "Cache-Control", value: "no-store")
    return HTTPResponse(status: entry.status, headers: headers, body: .bytes(problem.json))
  }
}
