import HTTP
import ImagePipeline
import Server
import Storage

extension AttachmentService {
  /// How a completed upload's body is read.
  struct UploadBodyShape: Sendable {
    /// The boundary when the body is `multipart/form-data` (its file parts are the images).
    var boundary: String?
  }

  /// The attachment id a 201's `Location` names, relative or under `server.publicBaseURL`
  /// (whose own path may be a prefix such as `/img`).
  static func attachmentID(inLocation location: String) -> String? {
    let prefix = Application.attachmentsPath + "/"
    guard let found = location.range(of: prefix, options: .backwards) else { return nil }
    let id = location[found.upperBound...]
    guard !id.isEmpty, !id.contains("/") else { return nil }
    return String(id)
  }

  /// Claims upload `id`'s processing, runs its body through the pipeline read in place, and
  /// answers exactly what a plain upload of the same bytes answers (status, headers, record;
  /// `Idempotency-Key` as in `request`). On a worker thread.
  ///
  /// With `record`, the answer is recorded in the upload (unless it is a 5xx or the client
  /// left, which a retry should redo: then the claim is released), and a later call answers the
  /// recorded result again. Store refusals (`uploadIncomplete`, `inProgress`, `notFound`) are
  /// thrown for the adapter to answer in its own terms.
  func completeUpload(
    tenant: String, id: String, shape: UploadBodyShape, request: UploadRequest, record: Bool,
    cancellation: PipelineCancellation
  ) throws -> HTTPResponse {
    let completion = try uploads.store.complete(tenant: tenant, id: id)
    let body: any UploadBody
    switch completion {
    case .processed(let state):
      guard let result = state.result else {
        throw StorageError(.corrupt, "processed upload without a result")
      }
      return Self.replayUpload(result.response)
    case .body(let completed, _):
      body = completed
    }
    let response: HTTPResponse
    do {
      let upload = try receivedUpload(body, shape: shape, request: request)
      response = process(upload, cancellation: cancellation)
    } catch {
      response = problem(error, requestID: request.requestID)
    }
    guard record else { return response }
    if response.status >= 500 || response.status == 499 || cancellation.isCancelled {
      do { try uploads.store.abandonProcessing(tenant: tenant, id: id) } catch {
        eventLog.error(
          "upload claim not released", requestID: request.requestID, code: "storage_error",
          detail: String(describing: error))
      }
      return response
    }
    guard case .bytes(let bytes) = response.body else { return response }
    var headers: [String: String] = [:]
    for name in ["Content-Type", "Location"] { headers[name] = response.headers.first(name: name) }
    let attachmentID = headers["Location"].flatMap(Self.attachmentID(inLocation:))
    do {
      try uploads.store.recordResult(
        tenant: tenant, id: id,
        result: UploadResult(
          attachmentID: attachmentID,
          response: StoredResponse(status: response.status, headers: headers, body: bytes)))
    } catch {
      // The answer still goes out; a repeat would process the upload again.
      eventLog.error(
        "upload result not recorded", requestID: request.requestID, code: "storage_error",
        detail: String(describing: error))
    }
    return response
  }

  /// The images of a completed body, read in place: the body itself, or the file parts of a
  /// multipart body, each a range of it (parsed with the limits of an upload held in memory).
  func receivedUpload(_ body: any UploadBody, shape: UploadBodyShape, request: UploadRequest) throws
    -> ReceivedUpload
  {
    let whole = ImageBytes(body)
    guard let boundary = shape.boundary else {
      return ReceivedUpload(request: request, multipart: false, parts: [whole], rawBody: whole)
    }
    let limits = MultipartParser.Limits(
      maxPartBytes: options.maxUploadBytes, maxTotalBytes: options.maxUploadBytes, maxParts: options.maxParts)
    var parser = try MultipartParser(boundary: boundary, limits: limits)
    let ranges = try body.withUnsafeBytes { bytes in try Self.fileParts(of: bytes, parser: &parser) }
    guard !ranges.isEmpty else { throw AppError.malformedUpload("no file part") }
    return ReceivedUpload(
      request: request, multipart: true, parts: ranges.map { ImageBytes(body, range: $0) }, rawBody: whole)
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
        isFile = UploadConsumer.isFile(head)
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

  /// The recorded answer of a processed upload, again.
  static func replayUpload(_ stored: StoredResponse) -> HTTPResponse {
    var headers = HTTPHeaders()
    for (name, value) in stored.headers.sorted(by: { $0.key < $1.key }) {
      headers.add(name: name, value: value)
    }
    headers.add(name: "Cache-Control", value: "no-store")
    return HTTPResponse(status: stored.status, headers: headers, body: .bytes(stored.body))
  }
}
