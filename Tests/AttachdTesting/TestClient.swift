import HTTP
import Server
import Synchronization

/// One client for the application in two modes with the same API, as HummingbirdTesting's
/// `.router` and `.live`: `.inProcess` drives any `HTTPHandler` with no socket (the server's
/// parser, handler contract and writer, on threads of the client's own: see
/// `InProcessConnection`); `.live` speaks HTTP/1.1 to a running server on 127.0.0.1. Both send
/// the same request bytes and read the answer from the bytes that come back. Every request
/// goes on a connection of its own; every wait is bounded by `Configuration.timeout`.
public final class TestClient: Sendable {
  /// Where requests go.
  public enum Mode: Sendable {
    /// Straight into `handler`, as the server would call it.
    case inProcess(any HTTPHandler)
    /// To a server listening on 127.0.0.1:`port`.
    case live(port: Int)
  }

  /// Time limits, and the in-process mode's threads.
  public struct Configuration: Sendable {
    /// Seconds any read or write may wait.
    public var timeout: Double = 30
    /// In-process: threads of `Pool.cpu`.
    public var cpuThreads = 2
    /// In-process: work that may wait for a CPU thread; beyond it requests are `.overloaded`.
    public var cpuQueueLength = 16
    /// In-process: threads of `Pool.io`.
    public var ioThreads = 4

    public init() {}
  }

  private enum Transport {
    case inProcess(any HTTPHandler, InProcessLoop, InProcessPools)
    case live(port: Int)
  }

  public let configuration: Configuration
  private let transport: Transport
  /// In-process: the next made-up client port, so each connection has an address of its own.
  private let nextPort = Atomic<Int>(40_000)

  public init(_ mode: Mode, configuration: Configuration = Configuration()) {
    self.configuration = configuration
    switch mode {
    case .inProcess(let handler):
      transport = .inProcess(
        handler, InProcessLoop(),
        InProcessPools(
          cpuThreads: configuration.cpuThreads, cpuQueueLength: configuration.cpuQueueLength,
          ioThreads: configuration.ioThreads))
    case .live(let port):
      transport = .live(port: port)
    }
  }

  deinit { shutdown() }

  /// Lets the in-process mode's threads go once their work is done (nothing for `.live`).
  public func shutdown() {
    if case .inProcess(_, _, let pools) = transport { pools.shutdown() }
  }

  /// In-process: work on the client's `Pool.cpu`, queued or running (0 for `.live`).
  public var cpuJobs: Int {
    if case .inProcess(_, _, let pools) = transport { return pools.cpu.inFlight }
    return 0
  }

  /// A fresh connection.
  public func connect() throws -> TestConnection {
    switch transport {
    case .inProcess(let handler, let loop, let pools):
      let port = nextPort.add(1, ordering: .relaxed).newValue
      return TestConnection(
        wire: InProcessConnection(
          handler: handler, loop: loop, pools: pools, remoteAddress: "127.0.0.1:\(port)",
          timeout: configuration.timeout))
    case .live(let port):
      return try TestConnection.live(port: port, timeout: configuration.timeout)
    }
  }

  /// Sends one request and reads its final response (the interim ones in `interim`). The body
  /// is framed by `Content-Length`, or chunked for `.chunked`, unless `headers` frame it. With
  /// `Expect: 100-continue` the body waits for the `100` and stays unsent when a final answer
  /// comes first.
  public func execute(
    _ method: String, _ target: String, headers: HTTPHeaders = [:], body: TestBody = .empty
  ) throws -> TestResponse {
    let exchange = try start(method, target, headers: headers, framing: body.framing)
    if headers.first(name: "Expect")?.lowercased() == "100-continue", body.framing != .none,
      let early = try exchange.awaitContinue()
    {
      return early
    }
    do {
      try body.send(through: exchange)
    } catch {
      // The server may have answered and closed before taking the whole body (a refusal on
      // the way): its answer says what happened.
    }
    return try exchange.finish(trailers: body.trailers)
  }

  /// Sends `request` exactly as given (head, then `body`) and reads the final response; an
  /// answer to HEAD is recognised by the request line.
  public func execute(raw request: String, body: [UInt8] = []) throws -> TestResponse {
    let connection = try connect()
    try connection.send(Array(request.utf8) + body)
    return try connection.readFinal(forHead: request.hasPrefix("HEAD "))
  }

  /// Sends a request head on a fresh connection; the body follows through the exchange.
  /// `framing` adds `Content-Length` or `Transfer-Encoding: chunked` unless `headers` have
  /// one (then the body is sent as `headers` frame it). `Host` is added when missing.
  public func start(
    _ method: String, _ target: String, headers: HTTPHeaders = [:], framing: HTTPBodyFraming = .none
  ) throws -> TestExchange {
    var fields = headers.contains(name: "Host") ? [] : ["Host: 127.0.0.1"]
    fields += headers.map { "\($0.name): \($0.value)" }
    var chunked = headers.first(name: "Transfer-Encoding")?.lowercased().contains("chunked") ?? false
    if !headers.contains(name: "Content-Length") && !headers.contains(name: "Transfer-Encoding") {
      switch framing {
      case .none: break
      case .contentLength(let length): fields.append("Content-Length: \(length)")
      case .chunked:
        fields.append("Transfer-Encoding: chunked")
        chunked = true
      }
    }
    let connection = try connect()
    try connection.send(TestConnection.head("\(method) \(target) HTTP/1.1", fields))
    return TestExchange(connection: connection, forHead: method == "HEAD", chunked: chunked)
  }
}
