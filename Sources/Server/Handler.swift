import HTTP

// The contract between the server (sockets, timeouts, framing) and the application (routes,
// auth, logs). One request goes:
//
//   head(_:context:) on the event loop ─┬─ .respond(r)          answered now; an announced body
//                                       │                        is never read (no 100 Continue),
//                                       │                        and the connection closes
//                                       │                        (lingering close)
//                                       ├─ .offload(pool, work) `work` runs on `pool` (the CPU
//                                       │                        workers or the upload I/O
//                                       │                        threads) before any body is
//                                       │                        read; same rule for a body
//                                       └─ .readBody(c)         c.start(handle), then c.body(…)*
//                                                                with backpressure, then c.end or
//                                                                c.aborted; the answer goes
//                                                                through the handle
//   … the response is written (bytes, a file with sendfile, or a stream pulled from a producer)
//   the request's resources (`RequestContext.hold`) released once: when its final response is
//     queued, or (never answered) once its connection is done and no work of it still runs
//   completed(_:) once, on the event loop: status, bytes, duration, the handler's labels.
//
// Conditions the server meets on its own (bad request, slow client, overload) are turned into
// responses by `response(for:context:)` and still end in one `completed(_:)`.

/// A final response. The server adds `Date`, `Connection`, the framing headers
/// (`Content-Length` or `Transfer-Encoding`) and the request's `responseHeaders`, and leaves
/// out the body for HEAD (and for 204/304).
public struct HTTPResponse: Sendable {
  /// The body of a response.
  public enum Body: Sendable {
    /// No body (`Content-Length: 0`).
    case empty
    /// Bytes in memory.
    case bytes([UInt8])
    /// A byte range of a file, sent without loading it whole (sendfile on the loop).
    case file(path: String, offset: UInt64, length: UInt64)
    /// Bytes pulled from `producer` as the client reads them: `Content-Length` when `length`
    /// is known (the body ends once that many were written: a `finish` after that is
    /// ignored), else chunked (or, to an HTTP/1.0 client, delimited by closing the connection).
    /// A producer that fails, or delivers more or fewer bytes than announced, ends the
    /// response by closing the connection.
    case stream(length: UInt64?, producer: any ResponseBodyProducer)
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

/// One request as the handler sees it besides its head: where it came from, and the labels
/// and headers the handler attaches. Passed `inout` to `head` and `response(for:context:)`;
/// the server keeps it for the request and returns the labels in `completed(_:)`.
public struct RequestContext: Sendable {
  /// Peer address as "ip:port".
  public let remoteAddress: String
  /// The handler's id for this request (the server never makes one); echoed in the completion.
  public var requestID: String = ""
  /// The handler's label for metrics, e.g. a route template; echoed in the completion.
  public var route: String = ""
  /// Added to every response of this request, also the server's own (`response(for:context:)`
  /// answers), e.g. `X-Request-Id`. Interim responses do not carry them.
  public var responseHeaders: HTTPHeaders = [:]

  /// What the request holds until it is over (see `hold`).
  package var resources: [any RequestResource] = []

  public init(remoteAddress: String) { self.remoteAddress = remoteAddress }

  /// Makes the request own `resource` (an upload slot, say): the server releases it exactly
  /// once, when the request's final response is queued (before the client can read it), or,
  /// for a request never answered (its client left), once its connection is done with it and
  /// no work it handed to a pool (`offload`, `RequestHandle.execute`) still runs. Nobody else
  /// releases it, so no path can forget it or release it twice.
  public mutating func hold(_ resource: any RequestResource) { resources.append(resource) }
}

/// Something a request holds until it is over; see `RequestContext.hold`.
public protocol RequestResource: Sendable {
  /// Gives the resource back; called once, by the server, on any thread.
  func release()
}

/// The server's two thread pools: work handed to them names the one it needs.
public enum Pool: Sendable, Hashable {
  /// The CPU workers (`Server.Configuration.workerThreads`): bounded, with a bounded queue;
  /// work beyond it is refused and the request answered `.overloaded`. Decoding and whatever
  /// else keeps a core busy.
  case cpu
  /// The upload I/O threads (`Server.Configuration.ioThreads`): blocking file, index and
  /// object-store calls of uploads. Never refuses: a refused flush or close would strand a
  /// writer, and every job belongs to a connection that waits for it.
  case io
}

/// The application side of the server.
///
/// `head` and `response(for:context:)` run on an event loop: decide quickly, never block,
/// never touch the disk. Work that may block goes through `.offload` or `RequestHandle.offload`.
public protocol HTTPHandler: Sendable {
  /// Decides what to do with a request head.
  func head(_ head: HTTPRequestHead, context: inout RequestContext) -> HeadDecision

  /// The response to a condition the server answers on its own. `context` is the request's
  /// (with the handler's labels) when a head was decided, else fresh (a bad request line, a
  /// slow head: the handler labels it here). `.tooManyConnections` is asked once at start-up
  /// and sent canned. The status must be final (200…999) and the body `.bytes` or `.empty`.
  func response(for condition: ServerCondition, context: inout RequestContext) -> HTTPResponse

  /// Called once per request when it is over: the response was written whole, or the
  /// connection ended first. On an event loop: keep it quick (queue a log line, bump counters).
  func completed(_ request: CompletedRequest)
}

/// The handler's answer to a request head.
public enum HeadDecision {
  /// Answer now. An announced body is not read: the response goes out without
  /// `100 Continue`, and the connection closes (after draining what the client still sends).
  case respond(HTTPResponse)
  /// Run `work` on `pool` and send what it returns. Nothing of an announced body is read (as
  /// with `.respond`). A full CPU pool answers `.overloaded` at once. The token says when the
  /// client has gone (perhaps before the work started).
  case offload(_ pool: Pool = .cpu, _ work: @Sendable (RequestCancellation) -> HTTPResponse)
  /// Stream the body into the consumer (see `RequestBodyConsumer`).
  case readBody(any RequestBodyConsumer)
}

/// A body consumer's answer to its start or to one body slice.
public enum BodyAction {
  /// Go on reading.
  case proceed
  /// Stop reading the socket until `RequestHandle.resumeReading()`. While paused, the body
  /// timeouts (idle, minimum rate) do not run and `100 Continue` is not sent yet.
  case pause
  /// Stop reading for good (e.g. 413 once a chunked body passes the limit): the server sends
  /// the response and closes the connection; the consumer hears nothing more.
  case reject(HTTPResponse)
}

/// Receives one request body as it arrives. Calls come from the connection's event loop, one
/// at a time, in order: `start`, then `body`*, then exactly one of `end` or `aborted` (none
/// after a `.reject`, or after the consumer answered through the handle before the end).
public protocol RequestBodyConsumer: AnyObject {
  /// Before the first body byte (and before `100 Continue`): the handle to answer, send
  /// interim responses, resume reading and learn of cancellation through. Return `.pause`
  /// to read nothing until `resumeReading()`.
  func start(_ request: any RequestHandle) -> BodyAction
  /// A slice of the body; the memory is valid only during the call (copy or write it).
  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction
  /// The whole body has arrived; answer through the handle (from any thread, once).
  func end(trailers: HTTPHeaders)
  /// The client went away, timed out or broke the framing mid-body; `bytesReceived` body bytes
  /// had arrived. The handle's cancellation fires too.
  func aborted(bytesReceived: UInt64)
}

/// One request's line back to its connection, usable from any thread. Calls for a request
/// that is over (answered, or its connection closed) are ignored.
public protocol RequestHandle: Sendable {
  /// Sends the final response (exactly once; later calls are ignored). Sent while the body is
  /// still being read, it ends the reading like a `.reject`.
  func respond(_ response: HTTPResponse)
  /// Sends an interim 1xx response (not 100 or 101, which the server owns), e.g.
  /// `104 Upload Resumption Supported`, before the final one.
  func sendInterim(status: Int, headers: HTTPHeaders)
  /// Runs `work` on `pool` and responds with its result. When the CPU pool and its queue are
  /// full, responds with the handler's `.overloaded` answer and returns false. The token says
  /// when the client has gone (perhaps before the work started).
  @discardableResult
  func offload(_ pool: Pool, _ work: @escaping @Sendable (RequestCancellation) -> HTTPResponse) -> Bool
  /// Runs blocking `work` for this request on the upload I/O threads, answering nothing (a
  /// writer's flush or close); never refused, and run even after the client has gone. A request
  /// never answered keeps its resources until it returns.
  func execute(_ work: @escaping @Sendable () -> Void)
  /// Reads the body again after a `.pause`. Called from inside `body(_:)` it has no effect.
  func resumeReading()
  /// Fires when the client goes away (or times out) before the response is written whole.
  var cancellation: RequestCancellation { get }
}

extension RequestHandle {
  /// `offload(.cpu, work)`.
  @discardableResult
  public func offload(_ work: @escaping @Sendable (RequestCancellation) -> HTTPResponse) -> Bool {
    offload(.cpu, work)
  }
}

/// Produces a streamed response body on demand (pull, with backpressure).
///
/// The connection calls `produce(into:)` whenever its output queue has drained below the
/// watermark and the previous demand was answered; answer each call with one `write` (or
/// `finish`/`fail`), from any thread, now or later. Calls come from the event loop: never block
/// in them.
public protocol ResponseBodyProducer: Sendable {
  /// The connection wants the next chunk.
  func produce(into sink: any ResponseBodySink)
  /// The connection will ask for nothing more (client gone, write error or timeout, a HEAD or
  /// 304 that sends no body): release what the body holds. May come after a `finish`/`fail`
  /// sent from another thread; never comes after the body ended on the loop.
  func stop()
}

/// Where a `ResponseBodyProducer` delivers its answers; usable from any thread.
public protocol ResponseBodySink: Sendable {
  /// The next chunk (not empty).
  func write(_ bytes: [UInt8])
  /// The body is complete.
  func finish()
  /// The body cannot be completed: the connection is closed so the client sees it incomplete.
  func fail()
}

/// What the handler learns when a request is over (`HTTPHandler.completed`).
public struct CompletedRequest: Sendable {
  /// The request method, or "-" when no head was parsed.
  public var method: String
  /// The request target as sent (with any query: strip it before logging), or "-".
  public var target: String
  /// The final status queued, or 0 when none was.
  public var status: Int
  /// True when the final response was written whole.
  public var isComplete: Bool
  /// Request body bytes received.
  public var bytesIn: UInt64
  /// Response body bytes queued for the client (HEAD, 204 and 304 count 0).
  public var bytesOut: UInt64
  /// From the complete head (or the condition) to the response written or abandoned.
  public var duration: Duration
  /// The condition the server answered on its own, if it did.
  public var condition: ServerCondition?
  /// Peer address as "ip:port".
  public var remoteAddress: String
  /// `RequestContext.requestID` as the handler left it ("" if it never set one).
  public var requestID: String
  /// `RequestContext.route` as the handler left it.
  public var route: String

  public init(
    method: String, target: String, status: Int, isComplete: Bool, bytesIn: UInt64, bytesOut: UInt64,
    duration: Duration, condition: ServerCondition?, remoteAddress: String, requestID: String, route: String
  ) {
    self.method = method
    self.target = target
    self.status = status
    self.isComplete = isComplete
    self.bytesIn = bytesIn
    self.bytesOut = bytesOut
    self.duration = duration
    self.condition = condition
    self.remoteAddress = remoteAddress
    self.requestID = requestID
    self.route = route
  }
}
