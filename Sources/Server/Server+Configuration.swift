import Glibc
import HTTP

extension Server {
  /// Everything the server needs to know; defaults suit one small machine.
  public struct Configuration: Sendable, Equatable {
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
    /// Threads for blocking upload I/O (`Pool.io`): writers' flushes and closes, upload state.
    public var ioThreads = 8
    /// Open connections at most; beyond it a new connection gets `.tooManyConnections` and is closed.
    public var maxConnections = 16_384
    /// The whole request head must arrive within this (slowloris guard) → `.requestTimeout`.
    public var headerTimeout: Duration = .seconds(10)
    /// Longest silence in the middle of a request body → `.requestTimeout`, consumer aborted.
    public var bodyIdleTimeout: Duration = .seconds(30)
    /// Slowest a request body may arrive, bytes/s averaged over each `minBodyRateWindow`
    /// (0 = no minimum) → `.requestTimeout`, consumer aborted. Time the consumer keeps reading
    /// paused does not count. The default suits a phone on a bad mobile link (see the README).
    public var minBodyRate = 256
    /// The window `minBodyRate` is averaged over; the first starts when the body does.
    public var minBodyRateWindow: Duration = .seconds(60)
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
    /// A streamed response body's producer is asked for more while fewer bytes than this wait
    /// to be written (the most a connection buffers of a stream, beyond one chunk).
    public var responseBodyWatermark = 64 * 1024
    /// Turn SIGTERM and SIGINT into a graceful shutdown while `run()` runs.
    public var handleSignals = true

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
      guard ioThreads >= 1 else { throw ConfigurationError("ioThreads must be ≥ 1") }
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
      guard minBodyRate >= 0 else { throw ConfigurationError("minBodyRate must be ≥ 0") }
      guard minBodyRateWindow > .zero else { throw ConfigurationError("minBodyRateWindow must be positive") }
      guard responseBodyWatermark >= 1 else { throw ConfigurationError("responseBodyWatermark must be ≥ 1") }
    }

    var timeouts: ConnectionStateMachine.Timeouts {
      .init(
        header: headerTimeout, bodyIdle: bodyIdleTimeout, keepAlive: keepAliveTimeout, write: writeTimeout,
        linger: lingerTimeout)
    }

    var minimumRate: ConnectionStateMachine.MinimumRate {
      .init(bytesPerSecond: UInt64(max(0, minBodyRate)), window: minBodyRateWindow)
    }
  }

  /// A configuration value that cannot work.
  public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
  }
}

extension System {
  /// Online CPU cores.
  static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}
