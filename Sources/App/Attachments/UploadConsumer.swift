import Crypto
import HTTP
import ImagePipeline
import Server

/// Collects one upload body on its event loop: a raw image into one buffer sized from
/// `Content-Length`, or the file parts of a multipart body as the parser finds them. A body
/// over `uploads.spoolThreshold` (by its `Content-Length`, or once a chunked body passes it)
/// goes to the upload engine instead (`SpooledUpload`), so memory per upload stays bounded.
///
/// Counts bytes as they arrive, so a chunked body past the limit is refused mid-way (413).
/// Whatever happens, the upload slot is released exactly once.
final class UploadConsumer: RequestBodyConsumer {
  private let service: AttachmentService
  private let request: UploadRequest
  private let boundary: String?
  private let expectedBytes: Int?
  private var parser: MultipartParser?
  private var raw: [UInt8] = []
  private var pending: [UInt8] = []
  private var parts: [[UInt8]] = []
  private var current: [UInt8]?
  private var digest: SHA256?
  private var received = 0
  private var handle: (any RequestHandle)?
  /// Spool from the start (a `Content-Length` over the threshold).
  private let spoolNow: Bool
  /// A chunked body goes to the spool once it passes this many bytes.
  private let spoolAfter: Int?
  /// Where the body goes once spooled.
  private var spool: UploadBodyConsumer?

  init(service: AttachmentService, request: UploadRequest, boundary: String?, expectedBytes: Int?) throws {
    self.service = service
    self.request = request
    self.boundary = boundary
    self.expectedBytes = expectedBytes
    let threshold = service.uploads.options.spoolThreshold
    spoolNow = expectedBytes.map { $0 > threshold } ?? false
    spoolAfter = expectedBytes == nil ? threshold : nil
    guard !spoolNow else { return }
    if let boundary {
      let limits = MultipartParser.Limits(
        maxPartBytes: service.options.maxUploadBytes, maxTotalBytes: service.options.maxUploadBytes,
        maxParts: service.options.maxParts)
      parser = try MultipartParser(boundary: boundary, limits: limits)
      if request.idempotencyKey != nil { digest = SHA256() }
    } else if let expectedBytes {
      raw.reserveCapacity(expectedBytes)
    }
  }

  func start(_ request: any RequestHandle) -> BodyAction {
    handle = request
    guard spoolNow else { return .proceed }
    return startSpooling(prelude: [])
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    received += bytes.count
    service.metrics.httpRequestBytes.increment(by: UInt64(bytes.count))
    if let spool { return spool.body(bytes) }
    guard received <= request.maxBodyBytes else { return refuse(request.overLimit) }
    if let spoolAfter, received > spoolAfter {
      // A chunked body crossed the threshold: what is held goes first, then the rest streams.
      // (A multipart body's raw bytes were kept for this beside its parsed parts.)
      var prelude = raw
      prelude.append(contentsOf: bytes)
      raw = []
      parts = []
      pending = []
      current = nil
      parser = nil
      return startSpooling(prelude: prelude)
    }
    guard parser != nil else {
      raw.append(contentsOf: bytes)
      return .proceed
    }
    if spoolAfter != nil { raw.append(contentsOf: bytes) }
    digest?.update(bytes)
    do {
      try feed(bytes)
    } catch {
      return refuse(error)
    }
    return .proceed
  }

  /// Hands the body to a `SpooledUpload`; every later call goes there.
  private func startSpooling(prelude: [UInt8]) -> BodyAction {
    guard let handle else { return .pause }
    let delegate = SpooledUpload(
      service: service, request: request, declaredLength: expectedBytes,
      shape: AttachmentService.UploadBodyShape(boundary: boundary))
    let consumer = service.uploads.consumer(delegate: delegate, prelude: prelude)
    spool = consumer
    return consumer.start(handle)
  }

  func end(trailers: HTTPHeaders) {
    if let spool {
      spool.end(trailers: trailers)
      return
    }
    guard let responder = handle else { return }
    let multipart = parser != nil
    if multipart {
      do {
        try parser?.finish()
      } catch {
        request.slot.release()
        responder.respond(service.problem(error, requestID: request.requestID))
        return
      }
      guard !parts.isEmpty else {
        request.slot.release()
        responder.respond(
          service.problem(AppError.malformedUpload("no file part"), requestID: request.requestID))
        return
      }
    }
    let upload = ReceivedUpload(
      request: request, multipart: multipart,
      parts: multipart ? parts.map(ImageBytes.init) : [ImageBytes(raw)],
      bodyDigest: digest?.finalizeHex())
    raw = []
    parts = []
    let service = self.service
    let slot = request.slot
    service.queued.add(1, ordering: .relaxed)
    let accepted = responder.offload { cancellation in
      service.queued.subtract(1, ordering: .relaxed)
      defer { slot.release() }
      // The client left while the job waited for a worker: nothing is stored, and nobody is
      // there to answer (a cancelled request's connection is closed; this answer is dropped).
      guard !cancellation.isCancelled else { return Self.abandoned }
      let pipelineCancellation = PipelineCancellation()
      cancellation.onCancel { pipelineCancellation.cancel() }
      return service.process(upload, cancellation: pipelineCancellation)
    }
    if !accepted {
      service.queued.subtract(1, ordering: .relaxed)
      service.metrics.recordRejection(code: "overloaded")
      slot.release()
    }
  }

  func aborted(bytesReceived: UInt64) {
    if let spool {
      spool.aborted(bytesReceived: bytesReceived)
      return
    }
    // Nothing was stored: the body never completed.
    request.slot.release()
    raw = []
    parts = []
  }

  /// The answer to an upload whose client has gone; never sent.
  static let abandoned = HTTPResponse(status: 503, headers: ["Cache-Control": "no-store"])

  private func refuse(_ error: any Error) -> BodyAction {
    request.slot.release()
    raw = []
    parts = []
    return .reject(service.problem(error, requestID: request.requestID))
  }

  /// Parses what arrived; only a tail that may start a delimiter is kept for the next slice.
  private func feed(_ bytes: UnsafeRawBufferPointer) throws {
    if pending.isEmpty {
      let used = try parse(bytes)
      if used < bytes.count { pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...])) }
    } else {
      pending.append(contentsOf: bytes)
      let buffer = pending
      let used = try buffer.withUnsafeBytes { try parse($0) }
      pending.removeFirst(used)
    }
  }

  private func parse(_ input: UnsafeRawBufferPointer) throws -> Int {
    var offset = 0
    while offset <= input.count {
      let base = offset
      let (event, consumed) = try parser!.next(UnsafeRawBufferPointer(rebasing: input[base...]))
      offset += consumed
      guard let event else { return offset }
      switch event {
      case .partBegin(let head):
        current = Self.isFile(head) ? [] : nil
      case .partBody(let range):
        current?.append(
          contentsOf: UnsafeRawBufferPointer(
            rebasing: input[(base + range.lowerBound)..<(base + range.upperBound)]))
      case .partEnd:
        if let part = current { parts.append(part) }
        current = nil
      case .end:
        return offset
      }
    }
    return offset
  }

  /// A part is a file when it has a file name or a non-text type; other form fields are ignored.
  static func isFile(_ head: MultipartPartHead) -> Bool {
    if head.filename != nil { return true }
    guard let type = head.contentType?.lowercased() else { return false }
    return !type.hasPrefix("text/")
  }
}
