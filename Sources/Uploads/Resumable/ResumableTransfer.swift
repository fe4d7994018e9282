import HTTP
import Server
import Storage
import Synchronization

/// One resumable-upload request that carries body bytes: the creation (`POST
/// /v1/attachments` offering a resumable upload) or an append (`PATCH` on the upload URL).
/// Streams its body into the upload through the engine, then answers as its interop version
/// spells it; a request that completes the upload has it processed like a plain upload.
final class ResumableTransfer: UploadBodyDelegate {
  enum Kind: Sendable {
    /// A creation: the upload gets this metadata and declared length; `baseURL` + id is the
    /// absolute upload URL sent in the `104`.
    case creation(baseURL: String, metadata: ResumableMetadata, length: Int?)
    /// An append at `offset` to upload `id`, declaring `length` when the request tells it.
    case append(id: String, offset: Int, length: Int?)
  }

  /// An append with no body that completes an upload already complete: it asks for the answer
  /// again (a client that lost it), which is the recorded result.
  struct RepeatedCompletion: Error {}

  private struct State {
    var upload: UploadState?
    var progressSent = 0
  }

  /// At most this many progress `104`s per request.
  static let maxProgressInterims = 4

  private let uploads: Uploads
  private let kind: Kind
  private let complete: Bool
  private let request: UploadRequest
  private let answers: ResumableAnswers
  private let bodyIsEmpty: Bool
  private let state = Mutex(State())

  init(
    uploads: Uploads, kind: Kind, complete: Bool, request: UploadRequest, version: ResumableVersion,
    bodyIsEmpty: Bool
  ) {
    self.uploads = uploads
    self.kind = kind
    self.complete = complete
    self.request = request
    self.bodyIsEmpty = bodyIsEmpty
    self.answers = ResumableAnswers(version: version, uploads: uploads, requestID: request.requestID)
  }

  private var tenant: String { request.caller.tenant }
  private var store: any UploadStore { uploads.store }

  // MARK: - UploadBodyDelegate (I/O threads)

  func openWriter(onPreempted: @escaping @Sendable () -> Void) throws -> any UploadWriter {
    switch kind {
    case .creation(_, let metadata, let length):
      let upload = try store.create(
        NewUpload(
          tenant: tenant, owner: request.caller.user, length: length, maxLength: request.maxBodyBytes,
          metadata: metadata.encoded, protocolName: Self.protocolName,
          lifetime: uploads.configuration.resumableLifetime))
      state.withLock { $0.upload = upload }
      return try store.openWriter(
        tenant: tenant, id: upload.id, offset: 0, length: nil, onPreempted: onPreempted)
    case .append(let id, let offset, let length):
      let upload = try uploads.resumable.upload(id: id, caller: request.caller)
      state.withLock { $0.upload = upload }
      // At interop 6 and 7 too when no answer was ever recorded (the node processing it died,
      // or the client left first): nothing is appended, the completion the client made gets
      // the answer it never had — else the upload, every byte in, could never become anything.
      if upload.isComplete, complete, bodyIsEmpty, offset == upload.length ?? upload.offset,
        answers.version.replaysRepeatedCompletion || upload.result == nil
      {
        throw RepeatedCompletion()
      }
      let writer = try store.openWriter(
        tenant: tenant, id: id, offset: offset, length: length, onPreempted: onPreempted)
      state.withLock { $0.upload = writer.upload }
      return writer
    }
  }

  func writerOpened(_ writer: any UploadWriter, handle: any RequestHandle) {
    guard case .creation(let baseURL, _, _) = kind else { return }
    var headers: HTTPHeaders = [
      "Upload-Draft-Interop-Version": String(answers.version.number), "Location": baseURL + writer.upload.id,
    ]
    if let limit = answers.limit(writer.upload) { headers.add(name: "Upload-Limit", value: limit) }
    handle.sendInterim(status: 104, headers: headers)
  }

  func openFailed(_ error: any Error, handle: any RequestHandle) {
    if error is RepeatedCompletion, let upload = state.withLock({ $0.upload }) {
      process(upload, handle: handle)
      return
    }
    let upload = state.withLock { $0.upload }
    var provided: Int?
    if case .append(_, let offset, _) = kind { provided = offset }
    handle.respond(answers.problem(error, position: position(upload, error: error), provided: provided))
  }

  func committed(offset: Int, handle: any RequestHandle) {
    guard answers.version.sendsProgress else { return }
    let send = state.withLock { state -> Bool in
      guard state.progressSent < Self.maxProgressInterims else { return false }
      state.progressSent += 1
      return true
    }
    guard send else { return }
    handle.sendInterim(
      status: 104,
      headers: [
        "Upload-Draft-Interop-Version": String(answers.version.number), "Upload-Offset": String(offset),
      ])
  }

  func closed(_ outcome: UploadCloseOutcome, handle: any RequestHandle) {
    let upload: UploadState
    switch outcome.state {
    case .success(let closed): upload = closed
    case .failure(let error):
      if outcome.reason != .aborted {
        handle.respond(answers.problem(error, position: position(state.withLock { $0.upload }, error: error)))
      }
      return
    }
    state.withLock { $0.upload = upload }
    switch outcome.reason {
    case .aborted:
      // The bytes that came are kept; the client resumes from them.
      break
    case .refused:
      var error = outcome.refusal ?? StorageError(.io, "body refused")
      if (error as? StorageError)?.code == .lengthExceeded {
        if upload.length != nil {
          // Past the length the client declared (past the maximum stays a 413).
          error = UploadError.uploadLengthExceeded
          if answers.version.invalidatesOnLengthExceeded {
            // From draft -08 on the upload is then invalid: it goes, and answers 404.
            _ = try? store.cancel(tenant: tenant, id: upload.id)
            handle.respond(answers.problem(error, position: nil))
            return
          }
        } else if request.maxBodyBytes < uploads.configuration.maxUploadBytes {
          error = request.caller.overMaxBytes
        }
      }
      handle.respond(answers.problem(error, position: Self.position(upload)))
    case .finished:
      if complete {
        process(upload, handle: handle)
      } else {
        var location: String?
        if case .creation(let baseURL, _, _) = kind { location = baseURL + upload.id }
        handle.respond(answers.acknowledged(upload, creation: location))
      }
    }
  }

  func preempted(handle: any RequestHandle) {
    let upload = state.withLock { $0.upload }
    handle.respond(
      answers.problem(
        StorageError(.preempted, "taken over"), position: upload.map { Self.position($0) }))
  }

  // MARK: - Completion

  /// The protocol name uploads of this adapter carry in the store.
  static let protocolName = "ietf"

  /// Processes the complete upload on the CPU workers and answers what a plain upload of the
  /// same bytes answers, dressed for this version.
  private func process(_ upload: UploadState, handle: any RequestHandle) {
    let uploads = self.uploads
    let answers = self.answers
    let metadata = ResumableMetadata(decoding: upload.metadata)
    let completion = request.completion(
      boundary: metadata.contentType.flatMap { type in
        type.lowercased().hasPrefix("multipart/") ? MultipartParser.boundary(fromContentType: type) : nil
      }, idempotencyKey: metadata.idempotencyKey)
    let tenant = self.tenant
    uploads.processing(on: handle) { cancellation in
      do {
        let answer = try uploads.complete(
          tenant: tenant, id: upload.id, request: completion, record: true, cancellation: cancellation)
        return answers.completed(answer.response, length: upload.length ?? upload.offset)
      } catch let error as StorageError where error.code == .uploadIncomplete {
        // The request said it completes the upload, but bytes of the declared length are missing.
        return answers.problem(
          StorageError(.lengthMismatch, error.detail, offset: error.offset),
          position: ResumableAnswers.Position(offset: error.offset ?? upload.offset, complete: false))
      } catch {
        return answers.problem(error, position: Self.position(upload))
      }
    }
  }

  // MARK: - Helpers

  static func position(_ upload: UploadState) -> ResumableAnswers.Position {
    ResumableAnswers.Position(
      offset: upload.isComplete ? upload.length ?? upload.offset : upload.offset, complete: upload.isComplete)
  }

  /// The position an error answer tells: the acknowledged offset the error carries, else the
  /// upload's; nothing for an upload that is not there.
  private func position(_ upload: UploadState?, error: any Error) -> ResumableAnswers.Position? {
    guard let upload, (error as? StorageError)?.code != .notFound else { return nil }
    var position = Self.position(upload)
    if let offset = (error as? StorageError)?.offset, !upload.isComplete { position.offset = offset }
    return position
  }
}
