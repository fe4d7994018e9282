import Glibc
import HTTP

/// One accepted socket, owned by one event loop and touched only on its thread. It does the
/// I/O and talks to the handler; `ConnectionStateMachine` decides what happens when. Input and
/// the request's life are here; responses, streams and completions in `Connection+Output`.
///
/// Client gone while input is paused (a response pending, or the consumer paused): a reset
/// or error (EPOLLERR, EPOLLHUP) closes at once. A FIN (EPOLLRDHUP, remembered, and looked at
/// again whenever input pauses) with nothing unread before it — no pipelined request, no more
/// body; `pending` empty and a one-byte `MSG_PEEK` finding the EOF — means the client has
/// left: a body being read is aborted, work owing the response is cancelled and the
/// connection closed (nginx's 499). A response already being written is finished: a client
/// that truly left resets the connection at our next write. A FIN behind unread bytes leaves
/// pipelining alone: those requests are served, then the EOF closes.
final class Connection {
  /// The request in progress: what its completion reports, and the handler's context.
  struct Exchange {
    var context: RequestContext
    var method: String
    var target: String
    var start: Instant
    var isHead: Bool
    var http11: Bool
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
    var status = 0
    var condition: ServerCondition?
    /// Made on first use (a body consumer, offloaded work); cancelled if the client leaves.
    var handle: ConnectionHandle?
    /// The resources the handler made the request hold (`RequestContext.hold`).
    var scope: RequestScope?
  }

  let fd: Int32
  unowned let loop: EventLoop
  let slot: Int
  let generation: UInt32
  let remoteAddress: String
  var machine: ConnectionStateMachine
  private var parser: HTTPRequestParser
  /// Input read but not yet parsed (a partial head, or a pipelined request while paused).
  private var pending: [UInt8] = []
  /// The parser asked for more than `pending` holds: read before parsing again.
  private var pendingNeedsMore = false
  var output = OutputQueue()
  /// Edge-triggered: the socket may hold unread input.
  var maybeReadable = false
  /// The client shut down its sending side (EPOLLRDHUP): an EOF waits behind any unread bytes.
  private var peerShutdown = false
  var consumer: (any RequestBodyConsumer)?
  /// `100 Continue` is owed; it goes out when reading the body begins (after `start`, or on
  /// resume), never for a body that is refused or not read.
  var owesContinue = false
  /// The parser still owes the `.end` of a request that was answered without reading a body.
  private var skipEnd = false
  var exchange: Exchange?
  /// The streamed response body being pulled, if any.
  var stream: ResponseStream?
  /// `flush` is writing (it is re-entered by a producer answering at once).
  var flushing = false
  /// Identifies the request a handle belongs to, so a late answer cannot hit the next one.
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
    let configuration = loop.server.configuration
    self.machine = ConnectionStateMachine(
      timeouts: configuration.timeouts, minimumRate: configuration.minimumRate, now: loop.now)
    self.parser = HTTPRequestParser(limits: configuration.parserLimits)
  }

  // MARK: Events from the loop

  /// An EPOLLIN/EPOLLRDHUP edge (or another turn after a long burst).
  func readable(peerShutdown shutdown: Bool = false) {
    guard !isClosed else { return }
    maybeReadable = true
    if shutdown { peerShutdown = true }
    pump()
  }

  /// An EPOLLOUT edge.
  func writable() {
    if !output.isEmpty { flush() }
  }

  /// EPOLLERR or EPOLLHUP: the peer reset the connection (or both directions are shut).
  func failed() {
    guard !isClosed else { return }
    // While lingering our side is already shut: read to the EOF rather than reset.
    if machine.inputMode == .discard {
      readable(peerShutdown: true)
    } else {
      close()
    }
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
  /// (a response is pending, or the consumer paused) or this connection had its share of the loop.
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
      // A short read drained the socket; new data will raise a new edge. After a FIN the EOF
      // is still to be read, and no edge will announce it.
      if count < loop.scratch.count && !peerShutdown { maybeReadable = false }
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
    if peerShutdown && machine.inputMode == .paused { checkPeerGone() }
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
    var context = RequestContext(remoteAddress: remoteAddress)
    let decision = loop.server.handler.head(head, context: &context)
    exchange = Exchange(
      context: context, method: head.method, target: head.target, start: loop.now,
      isHead: head.method == "HEAD", http11: head.version == .http1_1,
      scope: RequestScope(resources: context.resources))
    switch decision {
    case .respond(let response):
      _ = machine.headDecided(head, readsBody: false, now: loop.now)
      skipEnd = true
      queueResponse(response)
    case .offload(let pool, let work):
      _ = machine.headDecided(head, readsBody: false, now: loop.now)
      skipEnd = true
      makeHandle().offload(pool, work)
    case .readBody(let consumer):
      self.consumer = consumer
      if case .readBody(let sendContinue) = machine.headDecided(head, readsBody: true, now: loop.now) {
        owesContinue = sendContinue
      }
      let action = consumer.start(makeHandle())
      // The consumer may have answered through the handle already (on this thread).
      guard !isClosed, self.consumer === consumer else { return }
      apply(action)
    }
  }

  private func handleBody(_ bytes: UnsafeRawBufferPointer) {
    guard let consumer else { return }
    machine.bodyReceived(bytes.count, now: loop.now)
    exchange?.bytesIn += UInt64(bytes.count)
    let action = consumer.body(bytes)
    guard !isClosed, self.consumer === consumer else { return }
    apply(action)
  }

  private func handleEnd(_ trailers: HTTPHeaders) {
    if skipEnd {
      skipEnd = false
      return
    }
    guard let consumer else { return }
    self.consumer = nil
    machine.bodyEnded()
    consumer.end(trailers: trailers)
  }

  /// A consumer's answer to its start or to a body slice.
  private func apply(_ action: BodyAction) {
    switch action {
    case .proceed: sendContinueIfOwed()
    case .pause: machine.bodyPaused(now: loop.now)
    case .reject(let response):
      // After a reject the consumer hears nothing more: it chose to stop.
      stopReadingBody()
      queueResponse(response)
    }
  }

  /// Ends the body for a response that comes before it did (a reject, an early answer).
  func stopReadingBody() {
    consumer = nil
    owesContinue = false
    machine.bodyRejected()
  }

  private func sendContinueIfOwed() {
    guard owesContinue, machine.inputMode == .parse, case .readingBody = machine.state else { return }
    owesContinue = false
    var interim: [UInt8] = []
    HTTPResponseWriter.writeInterim(status: 100, into: &interim)
    output.append(interim)
    flush()
  }

  /// The consumer of request `sequence` wants its body again.
  func resumeReading(sequence: UInt64) {
    guard !isClosed, sequence == self.sequence, consumer != nil, machine.bodyResumed(now: loop.now) else {
      return
    }
    sendContinueIfOwed()
    if pending.isEmpty {
      // The parser may owe an event that needs no more input: the `.end` of a body whose last
      // byte came in the slice the consumer paused on. No new input would ever announce it.
      _ = parse(UnsafeRawBufferPointer(start: nil, count: 0))
      if isClosed { return }
    }
    pump()
  }

  /// A FIN arrived while input is paused: see the type's comment.
  private func checkPeerGone() {
    guard pending.isEmpty, !isClosed else { return }
    let result: IOResult<Int>
    do {
      result = try System.peek(fd)
    } catch {
      close()
      return
    }
    if case .processed(0) = result { peerClosed() }
  }

  private func peerClosed() {
    switch machine.peerClosed() {
    case .close: close()
    case .abortBody(let received):
      abortConsumer(received)
      close()
    case .cancelRequest: close()
    case .finishResponse: break
    }
  }

  /// Tells the body consumer (if any) that the body will not complete, and cancels the request.
  func abortConsumer(_ received: UInt64) {
    exchange?.handle?.cancellation.cancel()
    guard let consumer else { return }
    self.consumer = nil
    consumer.aborted(bytesReceived: received)
  }

  /// The request's handle, made on first use.
  func makeHandle() -> ConnectionHandle {
    if let handle = exchange?.handle { return handle }
    let scope = exchange?.scope ?? RequestScope(resources: [])
    if exchange?.scope == nil { exchange?.scope = scope }
    let handle = ConnectionHandle(connection: self, sequence: sequence, scope: scope)
    exchange?.handle = handle
    return handle
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

  /// After the response is written: on to the next request, or a lingering close.
  func responseDone() {
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

  /// Closes the socket now; a consumer still reading hears `aborted`, work still running is
  /// cancelled, a producer still streaming is stopped, and the request is reported incomplete.
  func close() {
    guard !isClosed else { return }
    abortConsumer(machine.bodyBytesReceived)
    isClosed = true
    stopStream()
    machine.closed()
    finishExchange(complete: false)
    output.discard()
    try? System.close(fd)
    loop.remove(self)
  }
}
