import HTTP
import Server
import Storage
import Synchronization

/// tus's side of one body streaming into an upload (a PATCH, or a creation with upload): which
/// upload and writer, and the tus answer once the body is in — 204 (201 for a creation) with the
/// new `Upload-Offset`, or, when the bytes complete the upload, the pipeline's result.
///
/// Runs on the server's upload I/O threads (see `UploadBodyDelegate`); the pipeline goes to the
/// CPU workers (`Uploads.processing`).
final class TusChunkDelegate: UploadBodyDelegate {
  let tus: TusUploads
  let chunk: TusUploads.Chunk
  let request: UploadRequest
  /// The upload's id once known (created or found), and its state when the writer opened.
  private let opened = Mutex<UploadState?>(nil)

  init(tus: TusUploads, chunk: TusUploads.Chunk, request: UploadRequest) {
    self.tus = tus
    self.chunk = chunk
    self.request = request
  }

  private var store: any UploadStore { tus.store }
  private var tenant: String { request.caller.tenant }
  private var requestID: String { request.requestID }

  /// The upload as the writer found it (nil before `openWriter` succeeded).
  var upload: UploadState? { opened.withLock { $0 } }

  // MARK: - UploadBodyDelegate

  func openWriter(onPreempted: @escaping @Sendable () -> Void) throws -> any UploadWriter {
    let writer: any UploadWriter
    switch chunk.target {
    case .upload(let id, let offset, let length):
      // Ownership first, with a read that does not disturb a writer in flight: another
      // user's request must not take this upload over.
      guard let state = try tus.visibleState(id: id, caller: request.caller) else {
        throw UploadError.notFound
      }
      opened.withLock { $0 = state }
      do {
        writer = try store.openWriter(
          tenant: tenant, id: id, offset: offset, length: length, onPreempted: onPreempted)
      } catch let error as StorageError {
        throw tus.tusError(error, upload: state, offset: offset)
      }
    case .creation(let creation, _):
      let state = try store.create(tus.newUpload(creation, caller: request.caller))
      opened.withLock { $0 = state }
      writer = try store.openWriter(
        tenant: tenant, id: state.id, offset: 0, length: nil, onPreempted: onPreempted)
    }
    let upload = writer.upload
    opened.withLock { $0 = upload }
    // A body that cannot fit is refused before a byte is read; what is there stays.
    if let declared = chunk.declaredBytes, upload.offset + declared > upload.limit {
      _ = try? writer.close()
      throw tus.overLength(upload, chunk: chunk)
    }
    return writer
  }

  func writerOpened(_ writer: any UploadWriter, handle: any RequestHandle) {}

  func openFailed(_ error: any Error, handle: any RequestHandle) {
    // A repeated final PATCH (its answer was lost): offset = length and no bytes. Answer what
    // the completion answered, processing again if the processor died.
    if case .upload(_, let offset, _) = chunk.target, let state = upload, state.isComplete,
      offset == state.length, chunk.declaredBytes == 0
    {
      complete(state, handle: handle)
      return
    }
    handle.respond(answer(tus.problem(error, requestID: requestID), state: upload, offset: nil))
  }

  func committed(offset: Int, handle: any RequestHandle) {}

  func closed(_ outcome: UploadCloseOutcome, handle: any RequestHandle) {
    switch outcome.reason {
    case .aborted:
      // Nobody to answer; every byte that arrived is committed for the client's resume.
      break
    case .refused:
      let closed = try? outcome.state.get()
      let state = closed ?? upload
      let refusal = outcome.refusal ?? StorageError(.io, "body refused")
      let error: any Error =
        if let storage = refusal as? StorageError, storage.code == .lengthExceeded, let state {
          tus.overLength(state, chunk: chunk)
        } else {
          refusal
        }
      // The close's state is the latest; when the close failed too, the write that failed says
      // where the upload stands (it may have committed on the way).
      let offset = closed?.offset ?? (refusal as? StorageError)?.offset ?? state?.offset
      handle.respond(answer(tus.problem(error, requestID: requestID), state: state, offset: offset))
    case .finished:
      switch outcome.state {
      case .failure(let error):
        handle.respond(
          answer(
            tus.problem(error, requestID: requestID), state: upload, offset: (error as? StorageError)?.offset)
        )
      case .success(let state):
        if let length = state.length, state.offset == length {
          complete(state, handle: handle)
        } else {
          handle.respond(progress(state))
        }
      }
    }
  }

  func preempted(handle: any RequestHandle) {
    let offset = (try? tus.visibleState(id: upload?.id ?? "", caller: request.caller))??.offset
    let error = TusError.preempted(offset: offset ?? upload?.offset ?? 0)
    handle.respond(answer(tus.problem(error, requestID: requestID), state: upload, offset: nil))
  }

  // MARK: - Answers

  /// 204 (201 for a creation) with the new offset: the upload is not complete yet.
  func progress(_ state: UploadState) -> HTTPResponse {
    var headers: HTTPHeaders = [
      "Upload-Offset": String(state.offset), "Upload-Expires": TusUploads.expires(state),
      "Cache-Control": "no-store",
    ]
    if case .creation(_, let location) = chunk.target {
      headers.add(name: "Location", value: location(state.id))
      return HTTPResponse(status: 201, headers: headers)
    }
    return HTTPResponse(status: 204, headers: headers)
  }

  /// The bytes are all in: the pipeline runs on the CPU workers and its answer is turned into
  /// tus terms (`answer`).
  func complete(_ state: UploadState, handle: any RequestHandle) {
    tus.uploads.processing(on: handle) { [self] cancellation in
      let completed = tus.completion(of: state, request: request, cancellation: cancellation)
      return answer(
        completed.response, state: state, offset: state.length ?? state.offset,
        attachment: completed.attachmentID)
    }
  }

  /// `response` in tus terms: a stored attachment (`attachment`) is 204 (201 with the record for
  /// a creation) with `Content-Location`; anything else keeps its status and problem body.
  /// Every answer carries the upload's `Upload-Offset` (`offset`, when the bytes are known to be
  /// in) and `Upload-Expires`, and, for a creation, the new upload's `Location`.
  func answer(_ response: HTTPResponse, state: UploadState?, offset: Int?, attachment: String? = nil)
    -> HTTPResponse
  {
    var out = response
    let attachment = response.status == 201 ? attachment : nil
    // A plain upload's Location names the attachment; here it becomes Content-Location.
    if attachment != nil { out.headers.remove(name: "Location") }
    var creationLocation: String?
    if case .creation(_, let location) = chunk.target, let state {
      creationLocation = location(state.id)
      out.headers.replaceOrAdd(name: "Location", value: location(state.id))
    }
    if let offset, !out.headers.contains(name: "Upload-Offset") {
      out.headers.add(name: "Upload-Offset", value: String(offset))
    }
    // The upload URL lives (and answers HEAD and GET) until then, complete or not.
    if let state, !out.headers.contains(name: "Upload-Expires") {
      out.headers.add(name: "Upload-Expires", value: TusUploads.expires(state))
    }
    guard let attachment else { return out }
    out.headers.add(name: "Content-Location", value: tus.uploads.host.attachmentPath(attachment))
    if creationLocation == nil {
      out.status = 204
      out.body = .empty
      out.headers.remove(name: "Content-Type")
    }
    return out
  }
}
