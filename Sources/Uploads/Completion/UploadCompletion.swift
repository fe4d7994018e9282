import HTTP
import Server
import Storage

/// How a complete body is read and who it is processed for: the same whether it arrived in one
/// request or in many.
struct UploadCompletionRequest: Sendable {
  /// The caller of the request that completes the upload (its profiles, its destination).
  var caller: UploadCaller
  var requestID: String
  /// The `Idempotency-Key` the body was sent with (a resumable upload keeps its creation's).
  var idempotencyKey: String?
  /// The boundary when the body is `multipart/form-data` (its file parts are the files).
  var boundary: String?
}

extension Uploads {
  /// The answer to an upload whose client has gone; never sent.
  static let abandoned = HTTPResponse(status: 503, headers: ["Cache-Control": "no-store"])

  /// Runs an upload's processing on the CPU workers, answering through `handle`; work whose
  /// client left while it waited for a worker is not done (nothing is stored). When the workers
  /// refuse it, the server answers `.overloaded`. `finally` runs once either way, after the
  /// work (or on the upload I/O threads when there was none).
  func processing(
    on handle: any RequestHandle, finally: @escaping @Sendable () -> Void = {},
    _ work: @escaping @Sendable (RequestCancellation) -> HTTPResponse
  ) {
    let accepted = handle.offload(.cpu) { cancellation in
      defer { finally() }
      guard !cancellation.isCancelled else { return Self.abandoned }
      return work(cancellation)
    }
    if !accepted { handle.execute(finally) }
  }

  /// The answer to a complete body: an idempotent request claims its key first (and answers
  /// what the first request with it answered, if that one finished), then the caller's
  /// destination processes it; a recordable answer is kept under the key. On a CPU worker.
  func answer(_ upload: ReceivedUpload, cancellation: RequestCancellation) -> UploadAnswer {
    let tenant = upload.caller.tenant
    guard let key = upload.idempotencyKey else {
      return upload.caller.destination.process(upload, cancellation: cancellation)
    }
    let fingerprint = upload.fingerprint()
    var upload = upload
    // The body's hash too: a key used again after its record expired may name other bytes.
    if upload.identity == nil { upload.identity = "\(tenant)\u{0}key \(key)\u{0}\(fingerprint)" }
    do {
      switch try idempotency.beginIdempotent(tenant: tenant, key: key, fingerprint: fingerprint) {
      case .started: break
      case .inProgress:
        return UploadAnswer(
          attachmentID: nil, response: problem(UploadError.idempotencyInProgress, requestID: upload.requestID)
        )
      case .mismatch:
        return UploadAnswer(
          attachmentID: nil, response: problem(UploadError.idempotencyMismatch, requestID: upload.requestID))
      case .completed(let stored):
        return UploadAnswer(attachmentID: nil, response: UploadAnswer.replay(stored, idempotent: true))
      }
    } catch {
      return UploadAnswer(attachmentID: nil, response: problem(error, requestID: upload.requestID))
    }
    let answer = upload.caller.destination.process(upload, cancellation: cancellation)
    do {
      guard answer.isRecordable, let recorded = answer.recorded else {
        try idempotency.abandonIdempotent(tenant: tenant, key: key)
        return answer
      }
      try idempotency.completeIdempotent(tenant: tenant, key: key, response: recorded.response)
    } catch {
      try? idempotency.abandonIdempotent(tenant: tenant, key: key)
      host.storageFailed("idempotency answer not stored", requestID: upload.requestID, error: error)
    }
    return answer
  }

  /// Claims upload `id`'s processing, runs its body through `answer` read in place, and answers
  /// exactly what a plain upload of the same bytes answers. On a CPU worker.
  ///
  /// With `record`, the answer is recorded in the upload (unless it is a 5xx or the client
  /// left, which a retry should redo: then the claim is released), and a later call answers the
  /// recorded result again. Store refusals (`uploadIncomplete`, `inProgress`, `notFound`) are
  /// thrown for the adapter to answer in its own terms.
  func complete(
    tenant: String, id: String, request: UploadCompletionRequest, record: Bool,
    cancellation: RequestCancellation
  ) throws -> UploadAnswer {
    let body: any UploadBody
    switch try store.complete(tenant: tenant, id: id) {
    case .processed(let state):
      guard let result = state.result else {
        throw StorageError(.corrupt, "processed upload without a result")
      }
      return UploadAnswer(
        attachmentID: result.attachmentID, response: UploadAnswer.replay(result.response, idempotent: false))
    case .body(let completed, _):
      body = completed
    }
    let answer: UploadAnswer
    do {
      var upload = try receivedUpload(body, request: request)
      upload.identity = "\(tenant)\u{0}upload \(id)"
      answer = self.answer(upload, cancellation: cancellation)
    } catch {
      answer = UploadAnswer(attachmentID: nil, response: problem(error, requestID: request.requestID))
    }
    guard record else { return answer }
    guard answer.isRecordable, !cancellation.isCancelled, let result = answer.recorded else {
      do { try store.abandonProcessing(tenant: tenant, id: id) } catch {
        host.storageFailed("upload claim not released", requestID: request.requestID, error: error)
      }
      return answer
    }
    do {
      try store.recordResult(tenant: tenant, id: id, result: result)
    } catch {
      // The answer still goes out; a repeat would process the upload again.
      host.storageFailed("upload result not recorded", requestID: request.requestID, error: error)
    }
    return answer
  }

  /// The files of a completed body, read in place: the body itself, or the file parts of a
  /// multipart body, each a range of it (parsed with the limits of an upload held in memory).
  func receivedUpload(_ body: any UploadBody, request: UploadCompletionRequest) throws -> ReceivedUpload {
    let whole = UploadedFile(body)
    var upload = ReceivedUpload(
      caller: request.caller, requestID: request.requestID, multipart: false, parts: [whole],
      idempotencyKey: request.idempotencyKey, rawBody: whole)
    guard let boundary = request.boundary else { return upload }
    var parser = try MultipartParser(boundary: boundary, limits: multipartLimits)
    let ranges = try body.withUnsafeBytes { bytes in try Self.fileParts(of: bytes, parser: &parser) }
    guard !ranges.isEmpty else { throw UploadError.malformedUpload("no file part") }
    upload.multipart = true
    upload.parts = ranges.map { UploadedFile(body, range: $0) }
    return upload
  }

  /// The multipart limits of an upload body.
  var multipartLimits: MultipartParser.Limits {
    MultipartParser.Limits(
      maxPartBytes: configuration.maxUploadBytes, maxTotalBytes: configuration.maxUploadBytes,
      maxParts: configuration.maxParts)
  }

  /// A part is a file when it has a file name or a non-text type; other form fields are ignored.
  static func isFile(_ head: MultipartPartHead) -> Bool {
    if head.filename != nil { return true }
    guard let type = head.contentType?.lowercased() else { return false }
    return !type.hasPrefix("text/")
  }

  /// The byte ranges of the file parts of a whole multipart body.
  static func fileParts(of input: UnsafeRawBufferPointer, parser: inout MultipartParser) throws -> [Range<
    Int
  >] {
    var ranges: [Range<Int>] = []
    var current: Range<Int>?
    var isFile = false
    var offset = 0
    parsing: while offset <= input.count {
      let base = offset
      let (event, consumed) = try parser.next(UnsafeRawBufferPointer(rebasing: input[base...]))
      offset += consumed
      guard let event else {
        // The whole body is given: wanting more means it ended inside a part.
        break parsing
      }
      switch event {
      case .partBegin(let head):
        isFile = Self.isFile(head)
        current = nil
      case .partBody(let range):
        guard isFile else { continue }
        let absolute = (base + range.lowerBound)..<(base + range.upperBound)
        if let open = current {
          // A part's body arrives as adjacent ranges of one input.
          guard open.upperBound == absolute.lowerBound else {
            throw MultipartError(.invalidDelimiter)
          }
          current = open.lowerBound..<absolute.upperBound
        } else {
          current = absolute
        }
      case .partEnd:
        if isFile { ranges.append(current ?? offset..<offset) }
        current = nil
        isFile = false
      case .end:
        break parsing
      }
    }
    try parser.finish()
    return ranges
  }
}
