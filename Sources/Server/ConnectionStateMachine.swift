import HTTP

/// The life of one HTTP/1.1 connection as a value: which phase it is in, when it times out,
/// when it must close. No I/O and no clock: the connection feeds it events with `now` and does
/// what the returned actions say (Hummingbird's HTTPConnectionStateHandler is the model).
///
/// One request at a time: the next pipelined request is parsed only after the current
/// response is fully written, so responses leave in order and a client that does not read
/// cannot make the server buffer more than one response.
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

  enum State: Equatable {
    /// Kept alive, waiting for the first byte of the next request.
    case idle(since: Instant)
    /// A request head is on its way; it must be complete by `since + header`.
    case readingHead(since: Instant, bytesSeen: Bool)
    /// The handler is reading the body.
    case readingBody(lastActivity: Instant, received: UInt64)
    /// The handler owes the response. Reading is paused.
    case awaitingResponse(received: UInt64)
    /// The response is queued and being written. Reading is paused.
    case writing(lastProgress: Instant)
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
    /// The request is complete; write its response, then close.
    case finishResponse
  }

  enum DrainAction: Equatable {
    case close
    /// A request is in progress: finish it, then close.
    case finishCurrent
  }

  let timeouts: Timeouts
  private(set) var state: State
  /// The connection closes once the current response is written.
  private(set) var closeAfterResponse = false
  /// The server is shutting down: no new request starts on this connection.
  private(set) var draining = false
  /// Input may still be on its way when we close (an unread body, a refused request).
  private(set) var lingerOnClose = false

  init(timeouts: Timeouts, now: Instant) {
    self.timeouts = timeouts
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
    case .idle, .readingHead, .readingBody: .parse
    case .awaitingResponse, .writing, .closed: .paused
    case .lingering: .discard
    }
  }

  var readingPaused: Bool { inputMode != .parse }

  /// Body bytes received for the current request so far.
  var bodyBytesReceived: UInt64 {
    switch state {
    case .readingBody(_, let received), .awaitingResponse(let received): received
    default: 0
    }
  }

  /// When `timedOut` has something to do, if ever.
  var deadline: Instant? {
    switch state {
    case .idle(let since): since + timeouts.keepAlive
    case .readingHead(let since, _): since + timeouts.header
    case .readingBody(let last, _): last + timeouts.bodyIdle
    case .writing(let last): last + timeouts.write
    case .lingering(let since): since + timeouts.linger
    case .awaitingResponse, .closed: nil
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
    state = .readingBody(lastActivity: now, received: 0)
    let sendContinue = head.expectsContinue && bodyAnnounced && head.version == .http1_1
    return .readBody(sendContinue: sendContinue)
  }

  /// `count` body bytes went to the handler.
  mutating func bodyReceived(_ count: Int, now: Instant) {
    guard case .readingBody(_, let received) = state else { return }
    state = .readingBody(lastActivity: now, received: received + UInt64(count))
  }

  /// The body is complete; the handler now owes the response.
  mutating func bodyEnded() {
    guard case .readingBody(_, let received) = state else { return }
    state = .awaitingResponse(received: received)
  }

  /// The handler stopped the body; its response follows and the connection closes.
  mutating func bodyRejected() {
    guard case .readingBody(_, let received) = state else { return }
    closeAfterResponse = true
    lingerOnClose = true
    state = .awaitingResponse(received: received)
  }

  /// The final response is being queued. Returns whether it must say `Connection: close`.
  mutating func responseQueued(now: Instant) -> Bool {
    if draining { closeAfterResponse = true }
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

  /// The whole response is written.
  mutating func responseFlushed(now: Instant) -> FlushAction {
    guard case .writing = state else { return closeAfterResponse ? .close : .readNextRequest }
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
    case .readingBody(_, let received):
      return .abortBody(received: received)
    case .writing, .lingering:
      state = .closed
      return .close
    case .awaitingResponse, .closed:
      return .none
    }
  }

  /// The client closed its side (EOF) or the connection failed on read.
  mutating func peerClosed() -> PeerClosedAction {
    lingerOnClose = false
    switch state {
    case .idle, .readingHead, .lingering, .closed:
      state = .closed
      return .close
    case .readingBody(_, let received):
      state = .closed
      return .abortBody(received: received)
    case .awaitingResponse, .writing:
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
    case .readingHead, .readingBody, .awaitingResponse, .writing:
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
