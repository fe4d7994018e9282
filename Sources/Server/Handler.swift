import HTTP

/// A final response. The server adds `Date`, `Connection` and the framing headers
/// (`Content-Length` or `Transfer-Encoding`), and leaves out the body for HEAD.
public struct HTTPResponse: Sendable {
  public enum Body: Sendable {
    case empty
    case bytes([UInt8])
    /// A byte range of a file, sent without loading it whole (pread/sendfile on the loop).
    case file(path: String, offset: UInt64, length: UInt64)

    public var count: UInt64 {
      switch self {
      case .empty: 0
      case .bytes(let b): UInt64(b.count)
      case .file(_, _, let length): length
      }
    }
  }

  public var status: Int
  public var headers: HTTPHeaders
  public var body: Body

  public init(status: Int, headers: HTTPHeaders = [:], body: Body = .empty) {
    self.status = status
    self.headers = headers
    self.body = body
  }
}

/// What the server knows about one request besides its head.
public struct RequestContext: Sendable {
  /// `X-Request-Id` as sent (when well-formed) or a fresh one; echoed on the response.
  public var requestID: String
  /// Peer address as "ip:port".
  public var remoteAddress: String
  public init(requestID: String, remoteAddress: String) {
    self.requestID = requestID
    self.remoteAddress = remoteAddress
  }
}

/// The application side of the server. `head` runs on an event loop: decide quickly, never
/// block, never decode. CPU work goes through `Responder.offload`.
public protocol HTTPHandler: Sendable {
  /// Decides what to do with a request head.
  func head(_ head: HTTPRequestHead, context: RequestContext) -> HeadDecision
  /// The response to a condition the server answers on its own (parse error, timeout,
  /// overload, connection cap, a broken response); `requestID` is nil only for
  /// `.tooManyConnections`, asked once at start-up. Runs on any thread: quick, never blocking.
  /// The status must be final (200…999) and the body `.bytes` or `.empty`.
  func response(for condition: ServerCondition, requestID: String?) -> HTTPResponse
}

/// The handler's answer to a request head.
public enum HeadDecision {
  /// Answer now. When the request announced a body, the server does not read it: it sends
  /// this response (without `100 Continue`) and closes the connection.
  case respond(HTTPResponse)
  /// Read the body into the consumer. With `Expect: 100-continue` the server sends
  /// `100 Continue` first, and only in this case.
  case readBody(any RequestBodyConsumer)
}

/// Answer to one body slice.
public enum BodyAction {
  case proceed
  /// Stop reading (e.g. 413 once a chunked body passes the limit): the server sends the
  /// response and closes the connection.
  case reject(HTTPResponse)
}

/// Receives a request body as it arrives. All calls come from the connection's event loop,
/// one at a time, in order; exactly one of `end` or `aborted` is called last.
public protocol RequestBodyConsumer: AnyObject {
  /// A slice of the body; the memory is valid only during the call (copy or write it).
  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction
  /// The whole body has arrived. Respond through `responder`, from any thread, once.
  func end(trailers: HTTPHeaders, responder: Responder)
  /// The client went away or timed out mid-body; `bytesReceived` body bytes had arrived.
  func aborted(bytesReceived: UInt64)
}

/// Delivers the response of one request from any thread.
public protocol Responder: Sendable {
  /// Sends the final response (exactly once; later calls are ignored).
  func respond(_ response: HTTPResponse)
  /// Sends an interim 1xx response (e.g. 104 Upload Resumption Supported) before the final one.
  func sendInterim(status: Int, headers: HTTPHeaders)
  /// Runs `work` on the bounded worker pool and responds with its result. When the pool and
  /// its queue are full, responds with the handler's `.overloaded` answer and returns false.
  @discardableResult
  func offload(_ work: @escaping @Sendable () -> HTTPResponse) -> Bool
}
