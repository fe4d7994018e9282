import Glibc
import HTTP
import Server

extension InProcessConnection {
  /// A response body pulled from its producer.
  struct Stream {
    let producer: any ResponseBodyProducer
    let sink: InProcessBodySink
    /// Bytes still owed when the length was announced.
    var remaining: UInt64?
    let chunked: Bool
  }

  // MARK: Answers from the handle (on the loop)

  /// The handler's final response for request `sequence`.
  func deliver(_ response: HTTPResponse, sequence: UInt64) {
    guard takesFinalAnswer(sequence) else {
      Self.discard(response)
      return
    }
    queueResponse(response)
  }

  /// The handler's answer to `condition` (`.overloaded` from a full CPU pool) for `sequence`.
  func deliverCondition(_ condition: ServerCondition, sequence: UInt64) {
    guard takesFinalAnswer(sequence) else { return }
    queueResponse(conditionResponse(condition))
  }

  /// Whether request `sequence` is waiting for its final answer; one that comes while its body
  /// is still being read ends the reading.
  private func takesFinalAnswer(_ sequence: UInt64) -> Bool {
    guard sequence == self.sequence else { return false }
    if case .readingBody = phase { stopReadingBody() }
    if case .awaitingResponse = phase { return true }
    return false
  }

  /// An interim (1xx) response for request `sequence`, before its final one; 100 and 101 are
  /// the server's, never the handler's.
  func deliverInterim(status: Int, headers: HTTPHeaders, sequence: UInt64) {
    guard sequence == self.sequence, (102...199).contains(status) else { return }
    switch phase {
    case .readingBody, .awaitingResponse:
      var interim: [UInt8] = []
      HTTPResponseWriter.writeInterim(status: status, headers: headers, into: &interim)
      output.write(interim)
    default: break
    }
  }

  /// Releases what an unsent response holds.
  static func discard(_ response: HTTPResponse) {
    if case .stream(_, let producer) = response.body { producer.stop() }
  }

  /// The handler's answer to `condition` with the request's context, held to what the server
  /// writes for a condition (`Server.checked`). A condition before any head (the parser
  /// refused the request line) still makes one request to report.
  func conditionResponse(_ condition: ServerCondition) -> HTTPResponse {
    var context = exchange?.context ?? RequestContext(remoteAddress: remoteAddress)
    let response = Server.checked(handler.response(for: condition, context: &context))
    if exchange == nil {
      exchange = Exchange(
        context: context, method: "-", target: "-", start: .now, isHead: false, http11: true,
        scope: RequestScope(resources: []))
    }
    exchange?.context = context
    exchange?.condition = condition
    return response
  }

  // MARK: Writing

  /// Writes the final response: the head with the request's `responseHeaders` and the framing
  /// the server would choose, then the body (bytes, a file's range, or a stream pulled from
  /// its producer). The request's resources go back as soon as the answer is queued.
  func queueResponse(_ response: HTTPResponse) {
    var response = response
    if !(200...999).contains(response.status) {
      Self.discard(response)
      response = conditionResponse(.invalidResponseStatus(response.status))
    }
    let sendsBody = exchange?.isHead != true && response.status != 204 && response.status != 304
    var fileBytes: [UInt8] = []
    if case .file(let path, let offset, let length) = response.body, sendsBody {
      do {
        fileBytes = try Self.read(path, offset: offset, length: length)
      } catch {
        response = conditionResponse(.unreadableFile(path: path, errno: error.errno))
      }
    }
    let framing = framing(of: response.body)
    if framing == .untilClose { closeAfterResponse = true }
    phase = .writing
    var headers = response.headers
    for field in exchange?.context.responseHeaders ?? [:] {
      headers.replaceOrAdd(name: field.name, value: field.value)
    }
    var out: [UInt8] = []
    HTTPResponseWriter.writeHead(
      status: response.status, headers: headers, framing: framing, keepAlive: !closeAfterResponse,
      date: dates.now(), into: &out)
    exchange?.status = response.status
    exchange?.scope.answered()
    switch response.body {
    case .empty: break
    case .bytes(let bytes):
      if sendsBody {
        out += bytes
        exchange?.bytesOut = UInt64(bytes.count)
      }
    case .file:
      out += fileBytes
      exchange?.bytesOut = UInt64(fileBytes.count)
    case .stream(let length, let producer):
      if sendsBody && length != 0 {
        emit(out)
        stream = Stream(
          producer: producer, sink: InProcessBodySink(connection: self, sequence: sequence),
          remaining: length,
          chunked: framing == .chunked)
        producer.produce(into: stream!.sink)
        return
      }
      // HEAD, 204, 304 or an announced empty body: nothing to pull.
      producer.stop()
    }
    emit(out)
    if case .file(_, _, let length) = response.body, sendsBody, fileBytes.count < length {
      // A file shorter than its range: the client sees the body cut, as after a failed sendfile.
      closeConnection()
      return
    }
    finishExchange(complete: true)
    readNextRequest()
  }

  /// Bytes of the final answer: to the pipe, or held until the request's resources are back.
  private func emit(_ bytes: [UInt8]) {
    if held != nil {
      held! += bytes
    } else {
      output.write(bytes)
    }
  }

  private func framing(of body: HTTPResponse.Body) -> HTTPResponseFraming {
    switch body {
    case .empty: .contentLength(0)
    case .bytes(let bytes): .contentLength(bytes.count)
    case .file(_, _, let length): .contentLength(Int(length))
    case .stream(let length?, _): .contentLength(Int(length))
    // HTTP/1.0 has no chunked coding: the body ends when the connection does.
    case .stream(nil, _): exchange?.http11 == false ? .untilClose : .chunked
    }
  }

  /// A file that could not be opened.
  private struct OpenFailure: Error {
    var errno: Int32
  }

  /// `length` bytes of `path` from `offset` (fewer when the file is shorter).
  private static func read(_ path: String, offset: UInt64, length: UInt64) throws(OpenFailure) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw OpenFailure(errno: errno) }
    defer { Glibc.close(fd) }
    var bytes = [UInt8](repeating: 0, count: Int(length))
    var done = 0
    while done < bytes.count {
      let n = bytes.withUnsafeMutableBytes {
        pread(fd, $0.baseAddress! + done, $0.count - done, off_t(offset) + off_t(done))
      }
      if n < 0 && errno == EINTR { continue }
      guard n > 0 else { break }
      done += n
    }
    return Array(bytes[0..<done])
  }

  // MARK: Streamed bodies (from `InProcessBodySink`, on the loop)

  func streamWrite(_ bytes: [UInt8], sequence: UInt64) {
    guard sequence == self.sequence, var current = stream, current.sink.sequence == sequence else { return }
    if let remaining = current.remaining {
      // More than announced: the framing would lie; the producer is told to stop.
      guard UInt64(bytes.count) <= remaining else {
        closeConnection()
        return
      }
      current.remaining = remaining - UInt64(bytes.count)
    }
    stream = current
    if !bytes.isEmpty {
      var out: [UInt8] = []
      if current.chunked {
        HTTPResponseWriter.writeChunk(bytes, into: &out)
      } else {
        out = bytes
      }
      emit(out)
      exchange?.bytesOut += UInt64(bytes.count)
    }
    // The announced length is reached: the body is complete, whatever the producer says next.
    if current.remaining == 0 {
      streamEnded()
      return
    }
    // The next demand on a later turn, so a producer answering at once does not recurse.
    let sink = current.sink
    loop.execute { [self] in
      guard let next = stream, next.sink === sink else { return }
      next.producer.produce(into: next.sink)
    }
  }

  func streamFinish(sequence: UInt64) {
    guard sequence == self.sequence, let current = stream else { return }
    // Fewer bytes than announced: the client would wait for the rest.
    if let remaining = current.remaining, remaining > 0 {
      streamFail(sequence: sequence)
      return
    }
    if current.chunked {
      var last: [UInt8] = []
      HTTPResponseWriter.writeLastChunk(into: &last)
      emit(last)
    }
    streamEnded()
  }

  /// The body cannot be completed: the connection ends, so the client sees it cut short.
  func streamFail(sequence: UInt64) {
    guard sequence == self.sequence, stream != nil else { return }
    // The producer ended the body itself: it is not told to stop.
    stream = nil
    closeConnection()
  }

  private func streamEnded() {
    stream = nil
    finishExchange(complete: true)
    readNextRequest()
  }

  /// Tells an unfinished producer that nothing more will be asked.
  func stopStream() {
    guard let current = stream else { return }
    stream = nil
    current.producer.stop()
  }

  // MARK: Completion

  /// Reports the request to the handler (once) and forgets it.
  func finishExchange(complete: Bool) {
    guard let finished = exchange else { return }
    exchange = nil
    finished.scope.ended()
    handler.completed(
      CompletedRequest(
        method: finished.method, target: finished.target, status: finished.status, isComplete: complete,
        bytesIn: finished.bytesIn, bytesOut: finished.bytesOut,
        duration: ContinuousClock.now - finished.start,
        condition: finished.condition, remoteAddress: remoteAddress, requestID: finished.context.requestID,
        route: finished.context.route))
  }
}
