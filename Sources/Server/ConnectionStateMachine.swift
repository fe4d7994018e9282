import HTTP

/// The life of one HTTP/1.1 connection as a value: which phase it is in, when it times out,
/// when it must close. No I/O and no clock: the connection feeds it events with `now` and does
/// what the returned actions say (Hummingbird's HTTPConnectionStateHandler is the model).
///
/// One request at a time: the next pipelined request is parsed only after the current
/// response is fully written, so responses leave in order and a client that does not read
/// cannot make the server buffer more than one response.
///
/// A body is held to two limits while it is read: no silence longer than `bodyIdle`, and at
/// least `minBodyRate.bytesPerSecond × window` bytes in every window (tumbling windows, the
/// first starting when reading starts). Time the consumer keeps reading paused counts against
/// neither: both clocks are shifted by the pause when reading resumes.
struct ConnectionStateMachine {
  /// Each phase's time limit.
  struct Timeouts: Sendable, Equatable {
    /// The whole request head must arrive within this (slowloris guard) → `.requestTimeout`, close.
    var header: Duration
    /// The longest pause between body bytes → handler aborted, `.requestTimeout`, close.
    var bodyIdle: Duration
    /// How long a kept-alive connection may wait for its next request → close.
    var keepAlive: Duration
    /// The longest time a response write may make no progress (client not reading) → close.
    var write: Duration
    /// After an answer that left input unread: how long to keep reading (and discarding) it
    /// before closing, so the client's late bytes do not turn into a reset that destroys the
    /// answer in its receive buffer (RFC 9112 §9.6, nginx's lingering close).
    var linger: Duration
  }

  /// The slowest a body may arrive: `bytesPerSecond` averaged over each `window` (0 = off).
  struct MinimumRate: Sendable, Equatable {
    var bytesPerSecond: UInt64
    var window: Duration

    static let off = MinimumRate(bytesPerSecond: 0, window: .seconds(1))

    /// Bytes a window must bring; nil when the rate is off.
    var bytesPerWindow: UInt64? {
      guard bytesPerSecond > 0 else { return nil }
      let (seconds, attoseconds) = window.components
      let perWindow = Double(bytesPerSecond) * (Double(seconds) + Double(attoseconds) / 1e18)
      return max(1, UInt64(perWindow.rounded(.up)))
    }
  }

  /// How a body is arriving.
  struct BodyProgress: Equatable {
    /// Body bytes received so far.
    var received: UInt64
    /// The last time body bytes arrived (or reading started or resumed).
    var lastActivity: Instant
    /// When the current minimum-rate window began, and the bytes it has brought.
    var windowStart: Instant
    var windowReceived: UInt64 = 0
    /// Set while the consumer keeps reading paused.
    var pausedSince: Instant?

    init(now: Instant) {
      received = 0
      lastActivity = now
      windowStart = now
    }
  }

  enum State: Equatable {
    /// Kept alive, waiting for the first byte of the next request.
    case idle(since: Instant)
    /// A request head is on its way; it must be complete by `since + header`.
    case readingHead(since: Instant, bytesSeen: Bool)
    /// The handler is reading the body (or has paused reading it).
    case readingBody(BodyProgress)
    /// The handler owes the response. Reading is paused.
    case awaitingResponse(received: UInt64)
    /// The response is queued and being written. Reading is paused.
    case writing(lastProgress: Instant)
    /// A streamed response body waits for its producer, with nothing left to write: the client
    /// is not holding anything up, so no timeout runs (the producer owns its own). Reading is
    /// paused.
    case producing
    /// Our side is shut down for writing; input is read and dropped until EOF or the deadline.
    case lingering(since: Instant)
    case closed
  }

  enum HeadAction: Equatable {
    /// Stream the body to the handler; send `100 Continue` first when asked to.
    case readBody(sendContinue: Bool)
    /// Queue the handler's response now; the body (if any) is never read.
    case respond
  }

  enum FlushAction: Equatable {
    case close
    /// Shut down writing, discard input until the client closes or `linger` passes, then close.
    case lingerThenClose
    /// Go on with the next (possibly already buffered) request.
    case readNextRequest
  }

  enum TimeoutAction: Equatable {
    case none
    /// Close without a word (idle keep-alive, no bytes yet, or a client that stopped reading).
    case close
    /// Answer `.requestTimeout` and close.
    case requestTimeout
    /// Tell the body consumer, then answer `.requestTimeout` and close.
    case abortBody(received: UInt64)
  }

  enum PeerClosedAction: Equatable {
    case close
    case abortBody(received: UInt64)
    /// The request is complete and its response still owed: the client has left (an HTTP/1.1
    /// client that wants its answer does not half-close, and one that closed looks the same),
    /// so the work is cancelled and the connection closed, as nginx does (its 499).
    case cancelRequest
    /// The response is being written; finish it (a client that only half-closed reads it),
    /// then close.
    case finishResponse
  }

  enum DrainAction: Equatable {
    case close
    /// A request is in progress: finish it, then close.
    case finishCurrent
  }

  let timeouts: Timeouts
  let minimumRate: MinimumRate
  /// `minimumRate.bytesPerWindow`, worked out once.
  private let bytesPerWindow: UInt64?
  private(set) var state: State
  /// The connection closes once the current response is written.
  private(set) var closeAfterResponse = false
  /// The server is shutting down: no new request starts on this connection.
  private(set) var draining = false
  /// Input may still be on its way when we close (an unread body, a refused request).
  private(set) var lingerOnClose = false

  init(timeouts: Timeouts, minimumRate: MinimumRate = .off, now: Instant) {
    self.timeouts = timeouts
    self.minimumRate = minimumRate
    self.bytesPerWindow = minimumRate.bytesPerWindow
    self.state = .readingHead(since: now, bytesSeen: false)
  }

  /// What to do with input.
  enum InputMode: Equatable {
    /// Parse it as requests.
    case parse
    /// Leave it in the socket while the current response is pending (backpressure).
    case paused
    /// Read and drop it (lingering close).
    case discard
  }

  var inputMode: InputMode {
    switch state {
    case .idle, .readingHead: .parse
    case .readingBody(let body): body.pausedSince == nil ? .parse : .paused
    case .awaitingResponse, .writing, .producing, .closed: .paused
    case .lingering: .discard
    }
  }

  var readingPaused: Bool { inputMode != .parse }

  /// Body bytes received for the current request so far.
  var bodyBytesReceived: UInt64 {
    switch state {
    case .readingBody(let body): body.received
    case .awaitingResponse(let received): received
    default: 0
    }
  }

  /// When `timedOut` has something to do, if ever.
  var deadline: Instant? {
    switch state {
    case .idle(let since): return since + timeouts.keepAlive
    case .readingHead(let since, _): return since + timeouts.header
    case .readingBody(let body):
      guard body.pausedSince == nil else { return nil }
      let idle = body.lastActivity + timeouts.bodyIdle
      guard bytesPerWindow != nil else { return idle }
      return min(idle, body.windowStart + minimumRate.window)
    case .writing(let last): return last + timeouts.write
    case .lingering(let since): return since + timeouts.linger
    case .awaitingResponse, .producing, .closed: return nil
    }
  }

  /// Bytes of a request head arrived (or are buffered from a pipelined read).
  mutating func headBytesArrived(now: Instant) {
    switch state {
    case .idle: state = .readingHead(since: now, bytesSeen: true)
    case .readingHead(let since, _): state = .readingHead(since: since, bytesSeen: true)
    default: break
    }
  }

  /// The head is parsed and the handler chose to read the body (`readsBody`) or not.
  mutating func headDecided(_ head: HTTPRequestHead, readsBody: Bool, now: Instant) -> HeadAction {
    precondition(isReadingHead, "head decided in \(state)")
    let bodyAnnounced: Bool
    switch head.framing {
    case .none: bodyAnnounced = false
    case .contentLength(let length): bodyAnnounced = length > 0
    case .chunked: bodyAnnounced = true
    }
    if !head.keepAlive { closeAfterResponse = true }
    guard readsBody else {
      // The unread body is still in the pipe: the only safe way on is to close after answering.
      if bodyAnnounced {
        closeAfterResponse = true
        lingerOnClose = true
      }
      state = .awaitingResponse(received: 0)
      return .respond
    }
    state = .readingBody(BodyProgress(now: now))
    let sendContinue = head.expectsContinue && bodyAnnounced && head.version == .http1_1
    return .readBody(sendContinue: sendContinue)
  }

  /// `count` body bytes went to the handler.
  mutating func bodyReceived(_ count: Int, now: Instant) {
    guard case .readingBody(var body) = state else { return }
    body.received += UInt64(count)
    body.windowReceived += UInt64(count)
    body.lastActivity = now
    state = .readingBody(body)
  }

  /// The consumer asked to read nothing more for now: the socket is left alone and the body
  /// clocks stop.
  mutating func bodyPaused(now: Instant) {
    guard case .readingBody(var body) = state, body.pausedSince == nil else { return }
    body.pausedSince = now
    state = .readingBody(body)
  }

  /// The consumer wants the body again. The idle and rate clocks move on by the time spent
  /// paused, so the pause counts against neither. Returns false when reading was not paused.
  @discardableResult
  mutating func bodyResumed(now: Instant) -> Bool {
    guard case .readingBody(var body) = state, let since = body.pausedSince else { return false }
    let paused = now.since(since)
    body.lastActivity = body.lastActivity + paused
    body.windowStart = body.windowStart + paused
    body.pausedSince = nil
    state = .readingBody(body)
    return true
  }

  /// The body is complete; the handler now owes the response.
  mutating func bodyEnded() {
    guard case .readingBody(let body) = state else { return }
    state = .awaitingResponse(received: body.received)
  }

  /// The handler stopped the body; its response follows and the connection closes.
  mutating func bodyRejected() {
    guard case .readingBody(let body) = state else { return }
    closeAfterResponse = true
    lingerOnClose = true
    state = .awaitingResponse(received: body.received)
  }

  /// The final response is being queued (`closing`: its framing ends with the connection).
  /// Returns whether it must say `Connection: close`.
  mutating func responseQueued(now: Instant, closing: Bool = false) -> Bool {
    if draining || closing { closeAfterResponse = true }
    if case .readingBody = state {
      closeAfterResponse = true
      lingerOnClose = true
    }
    state = .writing(lastProgress: now)
    return closeAfterResponse
  }

  /// The answer to a `ServerCondition` (parse error, timeout) is being queued; it always closes.
  mutating func errorResponseQueued(now: Instant) {
    closeAfterResponse = true
    // Whatever the client sent after the bad or late part is still coming.
    if case .closed = state {} else { lingerOnClose = true }
    state = .writing(lastProgress: now)
  }

  /// Some response bytes left.
  mutating func writeProgressed(now: Instant) {
    if case .writing = state { state = .writing(lastProgress: now) }
  }

  /// Everything queued is written, and the streamed body's producer owes the next chunk.
  mutating func waitingForProducer() {
    if case .writing = state { state = .producing }
  }

  /// The producer delivered: there is something to write again.
  mutating func producerDelivered(now: Instant) {
    if case .producing = state { state = .writing(lastProgress: now) }
  }

  /// The whole response is written.
  mutating func responseFlushed(now: Instant) -> FlushAction {
    switch state {
    case .writing, .producing: break
    default: return closeAfterResponse ? .close : .readNextRequest
    }
    if closeAfterResponse || draining {
      if lingerOnClose {
        state = .lingering(since: now)
        return .lingerThenClose
      }
      state = .closed
      return .close
    }
    state = .idle(since: now)
    return .readNextRequest
  }

  /// Checks the current phase's deadline.
  mutating func timedOut(now: Instant) -> TimeoutAction {
    guard let deadline, deadline <= now else { return .none }
    switch state {
    case .idle:
      state = .closed
      return .close
    case .readingHead(_, let bytesSeen):
      guard bytesSeen else {
        state = .closed
        return .close
      }
      return .requestTimeout
    case .readingBody(var body):
      if now >= body.lastActivity + timeouts.bodyIdle { return .abortBody(received: body.received) }
      // The rate window ended: it brought enough, and the next one starts, or it did not.
      if let bytesPerWindow, now >= body.windowStart + minimumRate.window {
        guard body.windowReceived >= bytesPerWindow else { return .abortBody(received: body.received) }
        body.windowStart = now
        body.windowReceived = 0
        state = .readingBody(body)
      }
      return .none
    case .writing, .lingering:
      state = .closed
      return .close
    case .awaitingResponse, .producing, .closed:
      return .none
    }
  }

  /// The client closed its side and nothing it sent is left unread (EOF read, or a FIN seen
  /// while input is paused with the socket empty), or the connection failed on read.
  mutating func peerClosed() -> PeerClosedAction {
    lingerOnClose = false
    switch state {
    case .idle, .readingHead, .lingering, .closed:
      state = .closed
      return .close
    case .readingBody(let body):
      state = .closed
      return .abortBody(received: body.received)
    case .awaitingResponse:
      state = .closed
      return .cancelRequest
    case .writing, .producing:
      closeAfterResponse = true
      return .finishResponse
    }
  }

  /// The server began a graceful shutdown.
  mutating func drain() -> DrainAction {
    draining = true
    switch state {
    case .idle, .readingHead(_, bytesSeen: false), .lingering, .closed:
      state = .closed
      return .close
    case .readingHead, .readingBody, .awaitingResponse, .writing, .producing:
      return .finishCurrent
    }
  }

  /// The connection is gone (any reason).
  mutating func closed() { state = .closed }

  private var isReadingHead: Bool {
    switch state {
    case .idle, .readingHead: true
    default: false
    }
  }
}
