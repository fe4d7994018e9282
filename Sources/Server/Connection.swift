import Glibc
import HTTP
import Synchronization

/// One accepted socket, owned by one event loop and touched only on its thread. It does the
/// I/O and talks to the handler; `ConnectionStateMachine` decides what happens when.
final class Connection {
  /// What the access log needs about the request in progress.
  private struct RequestInfo {
    var method: String
    var path: String
    var requestID: String
    var start: Instant
    var isHead: Bool
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
    var status = 0
  }

  let fd: Int32
  unowned let loop: EventLoop
  let slot: Int
  let generation: UInt32
  let remoteAddress: String
  private(set) var machine: ConnectionStateMachine
  private var parser: HTTPRequestParser
  /// Input read but not yet parsed (a partial head, or a pipelined request while paused).
  private var pending: [UInt8] = []
  /// The parser asked for more than `pending` holds: read before parsing again.
  private var pendingNeedsMore = false
  private var output = OutputQueue()
  /// Edge-triggered: the socket may hold unread input.
  private var maybeReadable = false
  private var consumer: (any RequestBodyConsumer)?
  /// The parser still owes the `.end` of a request that was answered without reading a body.
  private var skipEnd = false
  private var request: RequestInfo?
  /// Identifies the request a `Responder` belongs to, so a late answer cannot hit the next one.
  private(set) var sequence: UInt64 = 0
  private var processing = false
  private(set) var isClosed = false
  /// The deadline this connection's live timer-heap entry is for.
  var scheduledDeadline: Instant?

  init(fd: Int32, loop: EventLoop, slot: Int, generation: UInt32, remoteAddress: String) {
    self.fd = fd
    self.loop = loop
    self.slot = slot
    self.generation = generation
    self.remoteAddress = remoteAddress
    self.machine = ConnectionStateMachine(timeouts: loop.server.configuration.timeouts, now: loop.now)
    self.parser = HTTPRequestParser(limits: loop.server.configuration.parserLimits)
  }

  // MARK: Events from the loop

  /// An EPOLLIN/EPOLLRDHUP edge (or another turn after a long burst).
  func readable() {
    maybeReadable = true
    pump()
  }

  /// An EPOLLOUT edge.
  func writable() {
    if !output.isEmpty { flush() }
  }

  func timerFired() {
    switch machine.timedOut(now: loop.now) {
    case .none: break
    case .close: close()
    case .requestTimeout: sendError(.requestTimeout)
    case .abortBody(let received):
      abortConsumer(received)
      sendError(.requestTimeout)
    }
  }

  func drain() {
    if machine.drain() == .close { close() }
  }

  // MARK: Input

  /// Parses buffered input and reads the socket until it is empty, input is paused
  /// (a response is pending) or this connection had its share of the loop.
  private func pump() {
    guard !processing else { return }
    processing = true
    defer {
      processing = false
      loop.rearm(self)
    }
    var reads = 0
    while !isClosed && machine.inputMode != .paused {
      if machine.inputMode == .discard {
        pending = []
        discardInput()
        return
      }
      if !pending.isEmpty && !pendingNeedsMore {
        let (consumed, needsMore) = pending.withUnsafeBytes { parse($0) }
        if isClosed { return }
        pending.removeFirst(consumed)
        pendingNeedsMore = needsMore
        continue
      }
      guard maybeReadable, reads < EventLoop.readsPerWakeup else { break }
      if pending.count >= loop.server.configuration.maxReadBuffer {
        // A head larger than the buffer may hold (the parser's own limit should come first).
        sendError(.malformedRequest(HTTPParserError(.headerBlockTooLarge)))
        return
      }
      let result: IOResult<Int>
      do {
        result = try System.read(fd, loop.scratch)
      } catch {
        peerClosed()
        return
      }
      guard case .processed(let count) = result else {
        maybeReadable = false
        break
      }
      if count == 0 {
        maybeReadable = false
        peerClosed()
        break
      }
      reads += 1
      // A short read drained the socket; new data will raise a new edge.
      if count < loop.scratch.count { maybeReadable = false }
      let input = UnsafeRawBufferPointer(rebasing: loop.scratch[0..<count])
      if pending.isEmpty {
        let (consumed, needsMore) = parse(input)
        if isClosed { return }
        if consumed < count {
          pending.append(contentsOf: input[consumed...])
          pendingNeedsMore = needsMore
        }
      } else {
        pending.append(contentsOf: input)
        pendingNeedsMore = false
      }
    }
    if maybeReadable && reads >= EventLoop.readsPerWakeup && !machine.readingPaused && !isClosed {
      loop.scheduleReadAgain(self)
    }
  }

  /// Feeds `input` to the parser until it needs more, input pauses or the connection closes.
  /// Returns the bytes consumed and whether the parser wants more input.
  private func parse(_ input: UnsafeRawBufferPointer) -> (consumed: Int, needsMore: Bool) {
    var offset = 0
    while !isClosed && !machine.readingPaused {
      let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
      if !rest.isEmpty { machine.headBytesArrived(now: loop.now) }
      let step: (event: HTTPRequestParser.Event?, consumed: Int)
      do {
        step = try parser.next(rest)
      } catch {
        abortConsumer(machine.bodyBytesReceived)
        sendError(.malformedRequest(error))
        return (offset, false)
      }
      offset += step.consumed
      guard let event = step.event else { return (offset, true) }
      switch event {
      case .head(let head): handleHead(head)
      case .body(let range): handleBody(UnsafeRawBufferPointer(rebasing: rest[range]))
      case .end(let trailers): handleEnd(trailers)
      }
    }
    return (offset, false)
  }

  private func handleHead(_ head: HTTPRequestHead) {
    sequence &+= 1
    let id = loop.requestID(for: head)
    request = RequestInfo(
      method: head.method, path: String(head.path), requestID: id, start: loop.now,
      isHead: head.method == "HEAD")
    let context = RequestContext(requestID: id, remoteAddress: remoteAddress)
    switch loop.server.handler.head(head, context: context) {
    case .respond(let response):
      _ = machine.headDecided(head, readsBody: false, now: loop.now)
      skipEnd = true
      queueResponse(response)
    case .readBody(let consumer):
      self.consumer = consumer
      if machine.headDecided(head, readsBody: true, now: loop.now) == .readBody(sendContinue: true) {
        var interim: [UInt8] = []
        HTTPResponseWriter.writeInterim(status: 100, into: &interim)
        output.append(interim)
        flush()
      }
    }
  }

  private func handleBody(_ bytes: UnsafeRawBufferPointer) {
    guard let consumer else { return }
    machine.bodyReceived(bytes.count, now: loop.now)
    request?.bytesIn += UInt64(bytes.count)
    if case .reject(let response) = consumer.body(bytes) {
      // After a reject the consumer hears nothing more: it chose to stop.
      self.consumer = nil
      machine.bodyRejected()
      queueResponse(response)
    }
  }

  private func handleEnd(_ trailers: HTTPHeaders) {
    if skipEnd {
      skipEnd = false
      return
    }
    guard let consumer else { return }
    self.consumer = nil
    machine.bodyEnded()
    let responder = ConnectionResponder(connection: self, sequence: sequence, requestID: request?.requestID)
    consumer.end(trailers: trailers, responder: responder)
  }

  private func peerClosed() {
    switch machine.peerClosed() {
    case .close: close()
    case .abortBody(let received):
      abortConsumer(received)
      close()
    case .finishResponse: break
    }
  }

  private func abortConsumer(_ received: UInt64) {
    guard let consumer else { return }
    self.consumer = nil
    consumer.aborted(bytesReceived: received)
  }

  // MARK: Output

  /// The handler's final response for request `sequence` (on the loop thread).
  func deliver(_ response: HTTPResponse, sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, case .awaitingResponse = machine.state else { return }
    queueResponse(response)
    loop.rearm(self)
  }

  /// An interim (1xx) response for request `sequence`, before its final one.
  func deliverInterim(status: Int, headers: HTTPHeaders, sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, (100...199).contains(status), status != 101 else { return }
    switch machine.state {
    case .readingBody, .awaitingResponse:
      var interim: [UInt8] = []
      HTTPResponseWriter.writeInterim(status: status, headers: headers, into: &interim)
      output.append(interim)
      flush()
    default: break
    }
  }

  private func queueResponse(_ response: HTTPResponse) {
    // Only a final status can end the exchange; anything else is the handler's bug.
    var response = response
    if !(200...999).contains(response.status) {
      response = loop.server.response(
        for: .invalidResponseStatus(response.status), requestID: request?.requestID)
    }
    var fileFD: Int32?
    if case .file(let path, _, _) = response.body, request?.isHead != true {
      do {
        fileFD = try System.open(path, flags: O_RDONLY)
      } catch {
        response = loop.server.response(
          for: .unreadableFile(path: path, errno: error.errno), requestID: request?.requestID)
      }
    }
    let close = machine.responseQueued(now: loop.now)
    writeResponse(response, fileFD: fileFD, close: close)
  }

  /// Protocol errors and timeouts: the handler's answer to `condition` is sent, the body is
  /// not read further and the connection closes.
  private func sendError(_ condition: ServerCondition) {
    machine.errorResponseQueued(now: loop.now)
    if request == nil {
      // No head was parsed (bad request line, slow head …): still one line in the access log.
      let id = loop.requestID(for: HTTPRequestHead(method: "", target: "/"))
      request = RequestInfo(method: "-", path: "-", requestID: id, start: loop.now, isHead: false)
    }
    writeResponse(
      loop.server.response(for: condition, requestID: request?.requestID), fileFD: nil, close: true)
  }

  private func writeResponse(_ response: HTTPResponse, fileFD: Int32?, close: Bool) {
    var headers = response.headers
    if let id = request?.requestID { headers.replaceOrAdd(name: "X-Request-Id", value: id) }
    let length = response.body.count
    var head: [UInt8] = []
    head.reserveCapacity(256)
    HTTPResponseWriter.writeHead(
      status: response.status, headers: headers, framing: .contentLength(Int(length)), keepAlive: !close,
      date: loop.dates.now(), into: &head)
    output.append(head)
    let sendsBody = request?.isHead != true && response.status != 204 && response.status != 304
    if sendsBody {
      switch response.body {
      case .empty: break
      case .bytes(let bytes): output.append(bytes)
      case .file(_, let offset, let length):
        if let fileFD { output.appendFile(fd: fileFD, offset: offset, length: length) }
      }
    }
    request?.status = response.status
    request?.bytesOut = sendsBody ? length : 0
    flush()
  }

  private func flush() {
    guard !isClosed else { return }
    let result: OutputQueue.FlushResult
    do {
      result = try output.flush(to: fd) { machine.writeProgressed(now: loop.now) }
    } catch {
      close()
      return
    }
    guard result == .done, case .writing = machine.state else { return }
    logRequest()
    switch machine.responseFlushed(now: loop.now) {
    case .close: close()
    case .lingerThenClose:
      // FIN after the answer; the client's remaining bytes are read and dropped, not reset.
      try? System.shutdown(fd, how: Int32(SHUT_WR))
      maybeReadable = true
      pump()
    case .readNextRequest: pump()
    }
  }

  /// Lingering close: read and drop input until EOF (then close) or the socket is empty.
  private func discardInput() {
    for _ in 0..<EventLoop.readsPerWakeup {
      let result: IOResult<Int>
      do {
        result = try System.read(fd, loop.scratch)
      } catch {
        close()
        return
      }
      guard case .processed(let count) = result else {
        maybeReadable = false
        return
      }
      if count == 0 {
        close()
        return
      }
    }
    loop.scheduleReadAgain(self)
  }

  private func logRequest() {
    guard let request else { return }
    self.request = nil
    guard let log = loop.server.configuration.accessLog else { return }
    log(
      AccessLogEntry(
        method: request.method, path: request.path, status: request.status, bytesIn: request.bytesIn,
        bytesOut: request.bytesOut, duration: loop.now.since(request.start), requestID: request.requestID,
        remoteAddress: remoteAddress))
  }

  /// Closes the socket now; a consumer still reading hears `aborted`.
  func close() {
    guard !isClosed else { return }
    abortConsumer(machine.bodyBytesReceived)
    isClosed = true
    machine.closed()
    if request != nil {
      request?.status = 0
      logRequest()
    }
    output.discard()
    try? System.close(fd)
    loop.remove(self)
  }
}

/// Answers one request from any thread; hops to the connection's loop when needed.
final class ConnectionResponder: Responder, @unchecked Sendable {
  // Touched only on `loop`'s thread; the class crosses threads but the connection never does.
  private let connection: Connection
  private let loop: EventLoop
  private let sequence: UInt64
  private let requestID: String?
  private let answered = Atomic<Bool>(false)

  init(connection: Connection, sequence: UInt64, requestID: String?) {
    self.connection = connection
    self.loop = connection.loop
    self.sequence = sequence
    self.requestID = requestID
  }

  func respond(_ response: HTTPResponse) {
    guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
    onLoop { $0.connection.deliver(response, sequence: $0.sequence) }
  }

  func sendInterim(status: Int, headers: HTTPHeaders) {
    guard !answered.load(ordering: .acquiring) else { return }
    onLoop { $0.connection.deliverInterim(status: status, headers: headers, sequence: $0.sequence) }
  }

  @discardableResult
  func offload(_ work: @escaping @Sendable () -> HTTPResponse) -> Bool {
    let accepted = loop.server.pool.trySubmit { [self] in respond(work()) }
    if !accepted { respond(loop.server.response(for: .overloaded, requestID: requestID)) }
    return accepted
  }

  private func onLoop(_ body: @escaping @Sendable (ConnectionResponder) -> Void) {
    if loop.inLoop {
      body(self)
    } else {
      loop.execute { [self] in body(self) }
    }
  }
}
