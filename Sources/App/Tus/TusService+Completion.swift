import HTTP
import ImagePipeline
import Server
import Storage

extension TusService {
  /// Runs the pipeline on a complete upload (claiming it, or answering the recorded result of a
  /// finished one) and returns what a plain upload of the same bytes answers; the store's
  /// refusals are turned into tus errors. On a worker thread.
  func completion(of state: UploadState, request: UploadRequest, cancellation: PipelineCancellation)
    -> HTTPResponse
  {
    do {
      return try attachments.completeUpload(
        tenant: state.tenant, id: state.id, shape: AttachmentService.UploadBodyShape(boundary: nil),
        request: request, record: true, cancellation: cancellation)
    } catch let error as StorageError {
      return problem(tusError(error, upload: state, offset: nil), requestID: request.requestID)
    } catch {
      return problem(error, requestID: request.requestID)
    }
  }

  /// The attachment id a plain upload's answer names (`201` + `Location: /v1/attachments/{id}`).
  static func storedAttachment(_ response: HTTPResponse) -> String? {
    guard response.status == 201, let location = response.headers.first(name: "Location") else { return nil }
    return AttachmentService.attachmentID(inLocation: location)
  }

  /// A store refusal in tus terms. `offset` is what the client named, when it named one.
  func tusError(_ error: StorageError, upload: UploadState, offset: Int?) -> any Error {
    let current = error.offset ?? upload.offset
    switch error.code {
    case .notFound: return AppError.notFound
    case .offsetMismatch: return TusError.offsetMismatch(offset: current)
    case .lengthMismatch: return TusError.lengthMismatch
    case .lengthExceeded: return TusError.lengthExceeded(offset: current)
    case .uploadIncomplete: return TusError.uploadIncomplete(offset: current)
    case .preempted: return TusError.preempted(offset: current)
    case .inProgress: return TusError.processing
    case .uploadCompleted:
      // Every byte is in: the client's offset is wrong unless it is the end (then its bytes
      // are too many).
      let length = upload.length ?? upload.offset
      return offset == length
        ? TusError.lengthExceeded(offset: length) : TusError.offsetMismatch(offset: length)
    default: return error
    }
  }

  /// Bytes past what `state` may hold: past its declared length (tus's own 413), or past the
  /// caller's cap on a deferred-length upload (the 413 or 403 a plain upload gets).
  func overLength(_ state: UploadState, chunk: Chunk) -> any Error {
    state.length != nil ? TusError.lengthExceeded(offset: state.offset) : chunk.overLimit
  }

  // MARK: - GET: the result at the upload URL

  /// `GET /v1/tus/{id}`: what the upload became. A stored attachment: 200 with its record
  /// (fresh: a new signed link) and `Content-Location`; a refused image: the problem a plain
  /// upload got, again; an upload with every byte in that nobody processed (the request that
  /// brought the last byte left, or its process died): processed now; one being processed: 409
  /// `upload_in_progress`; one still missing bytes: 409 `upload_incomplete` with its offset.
  func result(id: String, principal: Principal, context: RequestContext) -> HeadDecision {
    .offload { [self] cancellation in
      let state: UploadState
      do {
        guard let found = try visibleState(id: id, principal: principal) else {
          return problem(AppError.notFound, context)
        }
        state = found
      } catch {
        return problem(error, context)
      }
      switch state.status {
      case .receiving where state.length != state.offset:
        return problem(TusError.uploadIncomplete(offset: state.offset), context)
      case .receiving, .completed:
        // Every byte is in but no result: the request that brought the last one ended (or
        // its process died) before the pipeline ran, or while it ran.
        return processNow(state, principal: principal, cancellation: cancellation, context: context)
      case .processed:
        return recorded(state, principal: principal, context: context)
      }
    }
  }

  /// The recorded result: the attachment's record, or the stored problem.
  func recorded(_ state: UploadState, principal: Principal, context: RequestContext) -> HTTPResponse {
    guard let result = state.result else { return problem(StorageError(.corrupt, "no result"), context) }
    guard let attachment = result.attachmentID else { return AttachmentService.replayUpload(result.response) }
    return record(attachment, principal: principal, context: context)
  }

  /// The attachment's record as `/meta` shows it (a fresh signed link), with `Content-Location`;
  /// 404 once the attachment is deleted or expired.
  func record(_ attachment: String, principal: Principal, context: RequestContext) -> HTTPResponse {
    var response = attachments.metaResponse(
      tenant: principal.tenant, viewer: principal.viewer, id: attachment, profile: nil, context: context)
    if response.status == 200 {
      response.headers.add(name: "Content-Location", value: Application.attachmentsPath + "/" + attachment)
      response.headers.replaceOrAdd(name: "Cache-Control", value: "no-store")
    }
    return response
  }

  /// A complete upload nobody processed: process it now, in this request (holding an upload
  /// slot like any upload), then answer like a recorded result.
  func processNow(
    _ state: UploadState, principal: Principal, cancellation: RequestCancellation, context: RequestContext
  ) -> HTTPResponse {
    if case .failure(let error) = access.beginUpload(for: principal) { return problem(error, context) }
    attachments.metrics.uploadsInFlight.increment()
    let slot = UploadSlot(service: attachments, principal: principal)
    defer { slot.release() }
    let maxLength = access.maxUploadBytes(for: principal, serverLimit: attachments.options.maxUploadBytes)
    let request = UploadRequest(
      principal: principal, idempotencyKey: nil, requestID: context.requestID, slot: slot,
      maxBodyBytes: maxLength, overLimit: AppError.uploadTooLarge
    ).withTenantDefaultProfile(attachments.options.profiles)
    let pipelineCancellation = PipelineCancellation()
    cancellation.onCancel { pipelineCancellation.cancel() }
    let response = completion(of: state, request: request, cancellation: pipelineCancellation)
    guard let attachment = Self.storedAttachment(response) else { return response }
    return record(attachment, principal: principal, context: context)
  }
}
