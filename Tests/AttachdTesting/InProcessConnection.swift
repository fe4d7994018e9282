import HTTP
import Server
import Synchronization

/// One connection of the in-process mode: the bytes the test sends go through the server's
/// own parser into the handler, on the client's loop, following the contract drawn in
/// `Sources/Server/Handler.swift` as the server's `Connection` does — `head`, then an answer,
/// an offload or a body read with backpressure and `100 Continue`; the request's resources
/// released once; one completion — and the answers are written with the server's own writer
/// into a pipe the test reads. What needs a socket (timeouts, a slow reader, lingering close,
/// a FIN noticed while paused) is the live mode's. The client shows a final answer once the
/// request's resources are back (`ReleaseSignal`): the server releases them as it queues the
/// answer, so neither lets a test's next request race their release. Input and the request's
/// life are here; responses, streams and completions in `InProcessConnection+Output`.
///
/// `@unchecked Sendable`: its state is touched on the loop only; the wire calls hop there or
/// read the pipe.
final class InProcessConnection: TestWire, @unchecked Sendable {
  /// The request in progress: what its completion reports, and the handler's context.
  struct Exchange {
    var context: RequestContext
    var method: String
    var target: String
    var start: ContinuousClock.Instant
    var isHead: Bool
    var http11: Bool
    var bytesIn: UInt64 = 0
    var bytesOut: UInt64 = 0
    var status = 0
    var condition: ServerCondition?
    /// Made on first use (a body consumer, offloaded work); cancelled if the client leaves.
    var handle: InProcessHandle?
    let scope: RequestScope
  }

  /// Where the connection stands.
  enum Phase {
    case readingHead
    case readingBody(paused: Bool)
    /// The body was read, or will not be: input waits until the answer is written.
    case awaitingResponse
    case writing
    case closed
  }

  /// The most input handed to the parser at once: a server's read size, so a body arrives in
  /// slices of at most this much, as from a socket.
  static let readSize = 64 * 1024

  let loop: InProcessLoop
  let pools: InProcessPools
  let handler: any HTTPHandler
  let remoteAddress: String
  let output = InProcessPipe()
  // Read on the test's thread only.
  private var timeout: Double
  private let clientClosed = Atomic<Bool>(false)
  private var parser = HTTPRequestParser()
  private var pending: [UInt8] = []
  private var pendingStart = 0
  var phase = Phase.readingHead
  private var consumer: (any RequestBodyConsumer)?
  /// `100 Continue` is owed; it goes out when reading the body begins.
  private var owesContinue = false
  /// The parser still owes the `.end` of a request answered without reading a body.
  private var skipEnd = false
  /// Input is dropped (a body that will not be read): the connection closes after the answer.
  private var discarding = false
  var closeAfterResponse = false
  var exchange: Exchange?
  var stream: Stream?
  /// Bytes of the final answer waiting for the request's resources to be released; nil when
  /// bytes go straight to the pipe.
  var held: [UInt8]?
  /// The next request is read (or the connection ends) once `held` went out.
  private var readsNextOnRelease = false
  /// Identifies the request a handle belongs to, so a late answer cannot hit the next one.
  private(set) var sequence: UInt64 = 0
  private var pumping = false
  var dates = HTTPDateCache()

  init(
    handler: any HTTPHandler, loop: InProcessLoop, pools: InProcessPools, remoteAddress: String,
    timeout: Double
  ) {
    self.handler = handler
    self.loop = loop
    self.pools = pools
    self.remoteAddress = remoteAddress
    self.timeout = timeout
  }

  var isClosed: Bool {
    if case .closed = phase { return true }
    return false
  }

  /// Runs `body` with this connection on its loop.
  func onLoop(_ body: @escaping @Sendable (InProcessConnection) -> Void) {
    loop.run { [self] in body(self) }
  }

  // MARK: The wire (test threads)

  func send(_ bytes: [UInt8]) throws(TestClientError) {
    guard !clientClosed.load(ordering: .acquiring) else { throw TestClientError("send after close") }
    loop.execute { [self] in received(bytes) }
  }

  func receive() throws(TestClientError) -> [UInt8]? { try output.read(timeout: timeout) }

  func sendSome(_ bytes: [UInt8]) -> Int {
    (try? send(bytes)) == nil ? 0 : bytes.count
  }

  /// The handler cannot tell a FIN from a close before its answer (the server takes either as
  /// the client gone): the request ends, and what was answered can still be read.
  func finishSending() { close(reset: false) }

  func setTimeout(_ timeout: Double) { self.timeout = timeout }

  func close(reset: Bool) {
    guard !clientClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
    loop.execute { [self] in closeConnection() }
  }

  // MARK: Input (on the loop)

  private func received(_ bytes: [UInt8]) {
    guard !isClosed, !discarding else { return }
    pending += bytes
    pump()
  }

  private var readsInput: Bool {
    switch phase {
    case .readingHead, .readingBody(paused: false): !discarding
    default: false
    }
  }

  /// Parses buffered input until it runs out, input pauses or the connection closes.
  private func pump() {
    guard !pumping else { return }
    pumping = true
    defer { pumping = false }
    while readsInput {
      let step: (event: HTTPRequestParser.Event?, body: [UInt8], consumed: Int)
      do {
        step = try parseNext()
      } catch {
        sendError(.malformedRequest(error))
        return
      }
      pendingStart += step.consumed
      if pendingStart == pending.count {
        pending = []
        pendingStart = 0
      }
      guard let event = step.event else { return }
      switch event {
      case .head(let head): handleHead(head)
      case .body: handleBody(step.body)
      case .end(let trailers): handleEnd(trailers)
      }
    }
  }

  /// The parser's next event from at most `readSize` pending bytes, with a body slice copied
  /// out (the consumer may answer, and the connection change, while it reads it).
  private func parseNext() throws(HTTPParserError) -> (HTTPRequestParser.Event?, [UInt8], Int) {
    let end = min(pending.count, pendingStart + Self.readSize)
    var result: Result<(HTTPRequestParser.Event?, [UInt8], Int), HTTPParserError> = .success((nil, [], 0))
    pending.withUnsafeBytes { all in
      let window = UnsafeRawBufferPointer(rebasing: all[pendingStart..<end])
      do throws(HTTPParserError) {
        let (event, consumed) = try parser.next(window)
        var body: [UInt8] = []
        if case .body(let range) = event { body = Array(window[range]) }
        result = .success((event, body, consumed))
      } catch {
        result = .failure(error)
      }
    }
    return try result.get()
  }

  private func handleHead(_ head: HTTPRequestHead) {
    sequence &+= 1
    var context = RequestContext(remoteAddress: remoteAddress)
    let decision = handler.head(head, context: &context)
    // Last, so released last: after the handler's own resources.
    context.hold(ReleaseSignal(connection: self, sequence: sequence))
    held = []
    exchange = Exchange(
      context: context, method: head.method, target: head.target, start: .now, isHead: head.method == "HEAD",
      http11: head.version == .http1_1, scope: RequestScope(resources: context.resources))
    if !head.keepAlive { closeAfterResponse = true }
    let bodyAnnounced: Bool
    switch head.framing {
    case .none: bodyAnnounced = false
    case .contentLength(let length): bodyAnnounced = length > 0
    case .chunked: bodyAnnounced = true
    }
    switch decision {
    case .respond(let response):
      answerBeforeBody(bodyAnnounced: bodyAnnounced)
      queueResponse(response)
    case .offload(let pool, let work):
      answerBeforeBody(bodyAnnounced: bodyAnnounced)
      makeHandle().offload(pool, work)
    case .readBody(let consumer):
      self.consumer = consumer
      phase = .readingBody(paused: false)
      owesContinue = head.expectsContinue && bodyAnnounced && head.version == .http1_1
      let action = consumer.start(makeHandle())
      // The consumer may have answered through the handle already.
      guard !isClosed, self.consumer === consumer else { return }
      apply(action)
    }
  }

  /// No body will be read: an announced one is dropped and the connection closes after the answer.
  private func answerBeforeBody(bodyAnnounced: Bool) {
    phase = .awaitingResponse
    skipEnd = true
    if bodyAnnounced { stopInput() }
  }

  private func handleBody(_ bytes: [UInt8]) {
    guard let consumer else { return }
    exchange?.bytesIn += UInt64(bytes.count)
    let action = bytes.withUnsafeBytes { consumer.body($0) }
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
    phase = .awaitingResponse
    consumer.end(trailers: trailers)
  }

  /// A consumer's answer to its start or to a body slice.
  private func apply(_ action: BodyAction) {
    switch action {
    case .proceed: sendContinueIfOwed()
    case .pause: phase = .readingBody(paused: true)
    case .reject(let response):
      // After a reject the consumer hears nothing more.
      stopReadingBody()
      queueResponse(response)
    }
  }

  /// Ends the body for an answer that comes before it did (a reject, an early answer).
  func stopReadingBody() {
    consumer = nil
    owesContinue = false
    phase = .awaitingResponse
    stopInput()
  }

  private func stopInput() {
    discarding = true
    closeAfterResponse = true
    pending = []
    pendingStart = 0
  }

  private func sendContinueIfOwed() {
    guard owesContinue, case .readingBody(paused: false) = phase else { return }
    owesContinue = false
    var interim: [UInt8] = []
    HTTPResponseWriter.writeInterim(status: 100, into: &interim)
    output.write(interim)
  }

  /// The consumer of request `sequence` wants its body again.
  func resumeReading(sequence: UInt64) {
    guard sequence == self.sequence, consumer != nil, case .readingBody(paused: true) = phase else { return }
    phase = .readingBody(paused: false)
    sendContinueIfOwed()
    pump()
  }

  /// After an answer was written whole: the next request, or the end of the connection.
  func readNextRequest() {
    guard !isClosed else { return }
    guard held == nil else {
      readsNextOnRelease = true
      return
    }
    guard !closeAfterResponse else {
      closeConnection()
      return
    }
    phase = .readingHead
    pump()
  }

  /// Tells the body consumer (if any) that the body will not complete, and cancels the request.
  private func abortConsumer() {
    exchange?.handle?.cancellation.cancel()
    guard let consumer else { return }
    self.consumer = nil
    consumer.aborted(bytesReceived: exchange?.bytesIn ?? 0)
  }

  /// The request's handle, made on first use.
  func makeHandle() -> InProcessHandle {
    if let handle = exchange?.handle { return handle }
    let handle = InProcessHandle(
      connection: self, sequence: sequence, scope: exchange?.scope ?? RequestScope(resources: []))
    exchange?.handle = handle
    return handle
  }

  /// Ends the connection (the server's side, or the client left): a consumer still reading
  /// hears `aborted`, work still running is cancelled, a stream is stopped and the request is
  /// reported incomplete.
  func closeConnection() {
    guard !isClosed else { return }
    abortConsumer()
    phase = .closed
    stopStream()
    finishExchange(complete: false)
    pending = []
    if let bytes = held { output.write(bytes) }
    held = nil
    output.close()
  }

  /// The resources of request `sequence` are back: its answer goes out.
  func resourcesReleased(sequence: UInt64) {
    guard sequence == self.sequence, let bytes = held else { return }
    held = nil
    output.write(bytes)
    if readsNextOnRelease {
      readsNextOnRelease = false
      readNextRequest()
    }
  }

  /// A request the parser refused: the handler's answer to `condition`, then the end.
  private func sendError(_ condition: ServerCondition) {
    abortConsumer()
    stopInput()
    queueResponse(conditionResponse(condition))
  }
}

/// The last resource every in-process request holds: its release says the handler's resources
/// are back, and lets the request's answer out to the client.
struct ReleaseSignal: RequestResource {
  let connection: InProcessConnection
  let sequence: UInt64

  func release() {
    connection.onLoop { [sequence] in $0.resourcesReleased(sequence: sequence) }
  }
}
