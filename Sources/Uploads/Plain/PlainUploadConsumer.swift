import Crypto
import HTTP
import Server

/// Collects one upload body on its event loop: a raw image into one buffer sized from
/// `Content-Length`, or the file parts of a multipart body as the parser finds them. A body
/// over `uploads.spoolThreshold` (by its `Content-Length`, or once a chunked body passes it)
/// goes to the upload engine instead (`SpooledUpload`), so memory per upload stays bounded.
/// A whole body is processed on the CPU workers (`Uploads.answer`).
///
/// Counts bytes as they arrive, so a chunked body past the limit is refused mid-way (413).
final class PlainUploadConsumer: RequestBodyConsumer {
  private let uploads: Uploads
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

  init(uploads: Uploads, request: UploadRequest, boundary: String?, expectedBytes: Int?) throws {
    self.uploads = uploads
    self.request = request
    self.boundary = boundary
    self.expectedBytes = expectedBytes
    let threshold = uploads.configuration.spoolThreshold
    spoolNow = expectedBytes.map { $0 > threshold } ?? false
    spoolAfter = expectedBytes == nil ? threshold : nil
    guard !spoolNow else { return }
    if let boundary {
      parser = try MultipartParser(boundary: boundary, limits: uploads.multipartLimits)
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
    uploads.host.bodyBytesReceived(bytes.count)
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
      uploads: uploads, request: request, declaredLength: expectedBytes, boundary: boundary)
    let consumer = uploads.engine.consumer(delegate: delegate, prelude: prelude)
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
        responder.respond(uploads.problem(error, requestID: request.requestID))
        return
      }
      guard !parts.isEmpty else {
        responder.respond(
          uploads.problem(UploadError.malformedUpload("no file part"), requestID: request.requestID))
        return
      }
    }
    let upload = ReceivedUpload(
      caller: request.caller, requestID: request.requestID, multipart: multipart,
      parts: multipart ? parts.map(UploadedFile.init) : [UploadedFile(raw)],
      idempotencyKey: request.idempotencyKey, bodyDigest: digest?.finalizeHex())
    raw = []
    parts = []
    let uploads = self.uploads
    uploads.processing(on: responder) { cancellation in
      uploads.answer(upload, cancellation: cancellation).response
    }
  }

  func aborted(bytesReceived: UInt64) {
    if let spool {
      spool.aborted(bytesReceived: bytesReceived)
      return
    }
    // Nothing was stored: the body never completed.
    raw = []
    parts = []
  }

  private func refuse(_ error: any Error) -> BodyAction {
    raw = []
    parts = []
    return .reject(uploads.problem(error, requestID: request.requestID))
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
        current = Uploads.isFile(head) ? [] : nil
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
}
