import HTTP
import Server
import Storage

extension TusUploads {
  /// Runs the pipeline on a complete upload (claiming it, or answering the recorded result of a
  /// finished one) and returns what a plain upload of the same bytes answers; the store's
  /// refusals are turned into tus errors. On a CPU worker.
  func completion(of state: UploadState, request: UploadRequest, cancellation: RequestCancellation)
    -> UploadAnswer
  {
    do {
      return try uploads.complete(
        tenant: state.tenant, id: state.id, request: request.completion(boundary: nil), record: true,
        cancellation: cancellation)
    } catch let error as StorageError {
      return UploadAnswer(
        attachmentID: nil,
        response: problem(tusError(error, upload: state, offset: nil), requestID: request.requestID))
    } catch {
      return UploadAnswer(attachmentID: nil, response: problem(error, requestID: request.requestID))
    }
  }

  /// A store refusal in tus terms. `offset` is what the client named, when it named one.
  func tusError(_ error: StorageError, upload: UploadState, offset: Int?) -> any Error {
    let current = error.offset ?? upload.offset
    switch error.code {
    case .notFound: return UploadError.notFound
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
  /// brought the last byte left, or its process died): processed now, under the caller's upload
  /// cap like any upload; one being processed: 409 `upload_in_progress`; one still missing
  /// bytes: 409 `upload_incomplete` with its offset.
  func result(id: String, caller: UploadCaller, context: inout RequestContext) -> HeadDecision {
    // Held by the request from now on, taken only if the upload has to be processed.
    let slot = caller.destination.uploadSlot()
    context.hold(slot)
    let requestID = context.requestID
    return .offload(.cpu) { [self] cancellation in
      let state: UploadState
      do {
        guard let found = try visibleState(id: id, caller: caller) else {
          return problem(UploadError.notFound, requestID: requestID)
        }
        state = found
      } catch {
        return problem(error, requestID: requestID)
      }
      switch state.status {
      case .receiving where state.length != state.offset:
        return problem(TusError.uploadIncomplete(offset: state.offset), requestID: requestID)
      case .receiving, .completed:
        // Every byte is in but no result: the request that brought the last one ended (or
        // its process died) before the pipeline ran, or while it ran.
        if let error = slot.acquire() { return problem(error, requestID: requestID) }
        let request = UploadRequest(
          caller: caller, requestID: requestID, idempotencyKey: nil, maxBodyBytes: caller.maxBytes,
          overLimit: UploadError.uploadTooLarge)
        let answer = completion(of: state, request: request, cancellation: cancellation)
        guard let attachment = answer.attachmentID, answer.response.status == 201 else {
          return answer.response
        }
        return record(attachment, caller: caller, requestID: requestID)
      case .processed:
        guard let result = state.result else {
          return problem(StorageError(.corrupt, "no result"), requestID: requestID)
        }
        guard let attachment = result.attachmentID else {
          return UploadAnswer.replay(result.response, idempotent: false)
        }
        return record(attachment, caller: caller, requestID: requestID)
      }
    }
  }

  /// The attachment's record as `/meta` shows it (a fresh signed link), with `Content-Location`;
  /// 404 once the attachment is deleted or expired.
  func record(_ attachment: String, caller: UploadCaller, requestID: String) -> HTTPResponse {
    var response = caller.destination.record(ofAttachment: attachment, requestID: requestID)
    if response.status == 200 {
      response.headers.add(name: "Content-Location", value: uploads.host.attachmentPath(attachment))
      response.headers.replaceOrAdd(name: "Cache-Control", value: "no-store")
    }
    return response
  }
}
