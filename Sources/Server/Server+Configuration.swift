import Glibc
import HTTP

extension Server {
  /// Everything the server needs to know; defaults suit one small machine.
  public struct Configuration: Sendable {
    /// IPv4 address to bind (e.g. "127.0.0.1", "0.0.0.0").
    public var host = "127.0.0.1"
    /// TCP port; 0 picks a free one (read it back from `Server.localPort`).
    public var port = 8080
    /// Event loop threads (one per core by default).
    public var loopCount = System.coreCount
    /// Worker threads for `Responder.offload` (one per core by default).
    public var workerThreads = System.coreCount
    /// Offloaded work that may wait for a worker; beyond it requests get the handler's `.overloaded` answer.
    public var workerQueueLength = 64
    /// Open connections at most; beyond it a new connection gets `.tooManyConnections` and is closed.
    public var maxConnections = 16_384
    /// The whole request head must arrive within this (slowloris guard) → `.requestTimeout`.
    public var headerTimeout: Duration = .seconds(10)
    /// Longest silence in the middle of a request body → `.requestTimeout`, consumer aborted.
    public var bodyIdleTimeout: Duration = .seconds(30)
    /// How long a kept-alive connection may wait for its next request.
    public var keepAliveTimeout: Duration = .seconds(15)
    /// Longest time a response write may make no progress before the connection is dropped.
    public var writeTimeout: Duration = .seconds(30)
    /// After an answer that left request bytes unread (refused before the body, timeout, parse error): how long
    /// to read and drop what the client still sends before closing (lingering close).
    public var lingerTimeout: Duration = .seconds(2)
    /// On shutdown, in-flight requests get this long before their connections are closed.
    public var drainDeadline: Duration = .seconds(10)
    /// Request parser limits (header block size, field count …).
    public var parserLimits = HTTPRequestParser.Limits()
    /// Bytes of unparsed input a connection may hold (a pipelined burst or a partial head).
    public var maxReadBuffer = 128 * 1024
    /// `listen(2)` backlog.
    public var listenBacklog: Int32 = 1024
    /// Turn SIGTERM and SIGINT into a graceful shutdown while `run()` runs.
    public var handleSignals = true
    /// Called once per finished request, on an event loop thread (keep it quick).
    public var accessLog: (@Sendable (AccessLogEntry) -> Void)?

    public init() {}

    /// Throws when a value cannot work.
    public func validate() throws(ConfigurationError) {
      var addr = in_addr()
      if inet_pton(AF_INET, host, &addr) != 1 {
        throw ConfigurationError("host \(host) is not an IPv4 address")
      }
      guard (0...65535).contains(port) else { throw ConfigurationError("port \(port) out of range") }
      guard loopCount >= 1 else { throw ConfigurationError("loopCount must be ≥ 1") }
      guard workerThreads >= 1 else { throw ConfigurationError("workerThreads must be ≥ 1") }
      guard workerQueueLength >= 0 else { throw ConfigurationError("workerQueueLength must be ≥ 0") }
      guard maxConnections >= 1 else { throw ConfigurationError("maxConnections must be ≥ 1") }
      for (name, value) in [
        ("headerTimeout", headerTimeout), ("bodyIdleTimeout", bodyIdleTimeout),
        ("keepAliveTimeout", keepAliveTimeout), ("writeTimeout", writeTimeout),
        ("lingerTimeout", lingerTimeout),
      ] where value <= .zero {
        throw ConfigurationError("\(name) must be positive")
      }
      guard drainDeadline >= .zero else { throw ConfigurationError("drainDeadline must be ≥ 0") }
      guard maxReadBuffer >= 4096 else { throw ConfigurationError("maxReadBuffer must be ≥ 4096") }
    }

    var timeouts: ConnectionStateMachine.Timeouts {
      .init(
        header: headerTimeout, bodyIdle: bodyIdleTimeout, keepAlive: keepAliveTimeout, write: writeTimeout,
        linger: lingerTimeout)
    }
  }

  /// A configuration value that cannot work.
  public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
  }
}

/// One finished request, for the access log.
public struct AccessLogEntry: Sendable {
  public var method: String
  /// The request path (no query string, which may carry secrets).
  public var path: String
  /// The final status sent, or 0 when the connection ended before one was.
  public var status: Int
  /// Request body bytes received.
  public var bytesIn: UInt64
  /// Response body bytes sent (as announced; HEAD counts 0).
  public var bytesOut: UInt64
  /// From the complete head to the response written.
  public var duration: Duration
  public var requestID: String
  public var remoteAddress: String
}

extension System {
  /// Online CPU cores.
  static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
