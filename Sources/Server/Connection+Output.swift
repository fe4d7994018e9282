import Glibc
import HTTP

extension Connection {
  /// A response body pulled from its producer.
  struct ResponseStream {
    let producer: any ResponseBodyProducer
    let sink: ConnectionBodySink
    /// Bytes still owed when the length was announced.
    var remaining: UInt64?
    let chunked: Bool
    /// A `produce` call is unanswered.
    var awaiting = false
    /// The producer finished; its last bytes may still be queued.
    var finished = false
  }

  /// `produce` calls per flush before other connections get a turn (a producer answering
  /// at once with small chunks could otherwise keep the loop).
  static let producesPerTurn = 16

  // MARK: Answers from the handler

  /// The handler's final response for request `sequence` (on the loop thread).
  func deliver(_ response: HTTPResponse, sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, acceptsFinalResponse() else {
      Self.discard(response)
      return
    }
    queueResponse(response)
    loop.rearm(self)
  }

  /// The handler's answer to `condition` (e.g. `.overloaded` from `offload`) for request `sequence`.
  func deliverCondition(_ condition: ServerCondition, sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, acceptsFinalResponse() else { return }
    queueResponse(conditionResponse(condition))
    loop.rearm(self)
  }

  /// An interim (1xx) response for request `sequence`, before its final one.
  func deliverInterim(status: Int, headers: HTTPHeaders, sequence: UInt64) {
    // 100 belongs to the server (`Expect`), 101 would switch protocols.
    guard !isClosed, sequence == self.sequence, (102...199).contains(status) else { return }
    switch machine.state {
    case .readingBody, .awaitingResponse:
      var interim: [UInt8] = []
      HTTPResponseWriter.writeInterim(status: status, headers: headers, into: &interim)
      output.append(interim)
      flush()
    default: break
    }
  }

  /// Whether a final response may be queued now; one that arrives while the body is still
  /// being read ends the reading.
  private func acceptsFinalResponse() -> Bool {
    switch machine.state {
    case .awaitingResponse: return true
    case .readingBody:
      stopReadingBody()
      return true
    default: return false
    }
  }

  /// Releases what an unsent response holds.
  static func discard(_ response: HTTPResponse) {
    if case .stream(_, let producer) = response.body { producer.stop() }
  }

  /// The handler's answer to `condition`, with the request's context.
  func conditionResponse(_ condition: ServerCondition) -> HTTPResponse {
    if exchange == nil {
      // No head was parsed (bad request line, slow head …): still one request to report.
      exchange = Exchange(
        context: RequestContext(remoteAddress: remoteAddress), method: "-", target: "-", start: loop.now,
        isHead: false, http11: true)
    }
    exchange!.condition = condition
    return loop.server.response(for: condition, context: &exchange!.context)
  }

  // MARK: Writing

  func queueResponse(_ response: HTTPResponse) {
    var response = response
    // Only a final status can end the exchange; anything else is the handler's bug.
    if !(200...999).contains(response.status) {
      Self.discard(response)
      response = conditionResponse(.invalidResponseStatus(response.status))
    }
    let sendsBody = exchange?.isHead != true && response.status != 204 && response.status != 304
    var fileFD: Int32?
    if case .file(let path, _, _) = response.body, sendsBody {
      do {
        fileFD = try System.open(path, flags: O_RDONLY)
      } catch {
        response = conditionResponse(.unreadableFile(path: path, errno: error.errno))
      }
    }
    let framing = framing(of: response.body)
    let close = machine.responseQueued(now: loop.now, closing: framing == .untilClose)
    writeResponse(response, framing: framing, fileFD: fileFD, sendsBody: sendsBody, close: close)
  }

  /// Protocol errors and timeouts: the handler's answer to `condition` is sent, the body is
  /// not read further and the connection closes.
  func sendError(_ condition: ServerCondition) {
    machine.errorResponseQueued(now: loop.now)
    let response = conditionResponse(condition)
    writeResponse(
      response, framing: framing(of: response.body), fileFD: nil, sendsBody: exchange?.isHead != true,
      close: true)
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

  private func writeResponse(
    _ response: HTTPResponse, framing: HTTPResponseFraming, fileFD: Int32?, sendsBody: Bool, close: Bool
  ) {
    var headers = response.headers
    if let extra = exchange?.context.responseHeaders {
      for field in extra { headers.replaceOrAdd(name: field.name, value: field.value) }
    }
    var head: [UInt8] = []
    head.reserveCapacity(256)
    HTTPResponseWriter.writeHead(
      status: response.status, headers: headers, framing: framing, keepAlive: !close, date: loop.dates.now(),
      into: &head)
    output.append(head)
    exchange?.status = response.status
    // The request's work is done (its answer is here): what it held goes back before the client
    // can read the answer and send the next request.
    exchange?.scope?.answered()
    switch response.body {
    case .empty: break
    case .bytes(let bytes):
      if sendsBody {
        output.append(bytes)
        exchange?.bytesOut = UInt64(bytes.count)
      }
    case .file(_, let offset, let length):
      if let fileFD {
        output.appendFile(fd: fileFD, offset: offset, length: length)
        exchange?.bytesOut = length
      }
    case .stream(let length, let producer):
      if sendsBody && length != 0 {
        stream = ResponseStream(
          producer: producer, sink: ConnectionBodySink(connection: self, sequence: sequence),
          remaining: length,
          chunked: framing == .chunked)
      } else {
        // HEAD, 204, 304 or an announced empty body: nothing to pull.
        producer.stop()
      }
    }
    flush()
  }

  /// Writes what the socket takes, asks a streamed body's producer for more while the queue is
  /// below the watermark, and finishes the request once everything is written.
  func flush() {
    guard !isClosed, !flushing else { return }
    flushing = true
    let written = drainOutput()
    flushing = false
    guard written, !isClosed else { return }
    switch machine.state {
    case .writing, .producing: break
    // An interim response went out while the body is read or the answer is awaited.
    default: return
    }
    stream = nil
    finishExchange(complete: true)
    responseDone()
  }

  /// The write loop of `flush`; true when the response (and its stream) is written whole.
  private func drainOutput() -> Bool {
    var asks = 0
    while true {
      let result: OutputQueue.FlushResult
      do {
        result = try output.flush(to: fd) { machine.writeProgressed(now: loop.now) }
      } catch {
        close()
        return false
      }
      if let current = stream, !current.finished, !current.awaiting,
        output.queuedBytes < loop.server.configuration.responseBodyWatermark
      {
        guard asks < Self.producesPerTurn else {
          // Another turn for the other connections first; the sink brings us back.
          current.sink.flushLater()
          return false
        }
        asks += 1
        stream?.awaiting = true
        current.producer.produce(into: current.sink)
        if isClosed { return false }
        // Answered at once: write it in this turn.
        if result == .done && !output.isEmpty { continue }
      }
      guard result == .done, output.isEmpty else { return false }
      if let current = stream, !current.finished {
        machine.waitingForProducer()
        return false
      }
      return true
    }
  }

  // MARK: Streamed bodies (from `ConnectionBodySink`, on the loop thread)

  func streamWrite(_ bytes: [UInt8], sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, var current = stream, !current.finished else { return }
    current.awaiting = false
    if let remaining = current.remaining {
      // More than announced: the framing would lie. The producer did not end the body: it is
      // told to stop.
      guard UInt64(bytes.count) <= remaining else {
        close()
        return
      }
      current.remaining = remaining - UInt64(bytes.count)
      // The announced length is reached: the body is complete, whatever the producer says next.
      if current.remaining == 0 { current.finished = true }
    }
    stream = current
    if !bytes.isEmpty {
      if current.chunked {
        var header: [UInt8] = []
        HTTPResponseWriter.writeChunkHeader(size: bytes.count, into: &header)
        output.append(header)
        output.append(bytes)
        output.append(Self.crlf)
      } else {
        output.append(bytes)
      }
      exchange?.bytesOut += UInt64(bytes.count)
      machine.producerDelivered(now: loop.now)
    }
    flush()
  }

  func streamFinish(sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, var current = stream, !current.finished else { return }
    // Fewer bytes than announced: the client would wait for the rest.
    if let remaining = current.remaining, remaining > 0 {
      streamFail(sequence: sequence)
      return
    }
    current.finished = true
    current.awaiting = false
    stream = current
    if current.chunked {
      var last: [UInt8] = []
      HTTPResponseWriter.writeLastChunk(into: &last)
      output.append(last)
    }
    machine.producerDelivered(now: loop.now)
    flush()
  }

  /// The body cannot be completed: close, so the client sees it cut short.
  func streamFail(sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, stream != nil else { return }
    // The producer ended the body itself: it is not told to stop.
    stream = nil
    close()
  }

  /// Tells an unfinished producer that nothing more will be asked.
  func stopStream() {
    guard let current = stream else { return }
    stream = nil
    if !current.finished { current.producer.stop() }
  }

  // MARK: Completion

  /// Reports the request to the handler (once) and forgets it.
  func finishExchange(complete: Bool) {
    guard let finished = exchange else { return }
    exchange = nil
    finished.scope?.ended()
    loop.server.handler.completed(
      CompletedRequest(
        method: finished.method, target: finished.target, status: finished.status, isComplete: complete,
        bytesIn: finished.bytesIn, bytesOut: finished.bytesOut, duration: loop.now.since(finished.start),
        condition: finished.condition, remoteAddress: remoteAddress, requestID: finished.context.requestID,
        route: finished.context.route))
  }

  private static let crlf: [UInt8] = [0x0D, 0x0A]
}
