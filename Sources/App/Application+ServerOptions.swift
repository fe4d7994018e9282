import Server

#if canImport(Glibc)
  import Glibc
#endif

extension Application {
  /// Where the server listens and the limits it holds: a `Server.Configuration` (whose defaults
  /// are the only ones, and whose fields say what each setting does) seen in the units of the
  /// configuration file: seconds as numbers, and 0 threads for the server's one per core.
  public struct ServerOptions: Sendable, Equatable {
    /// What the settings below read and write.
    var configuration = Server.Configuration()
    /// Event loop threads; 0 = one per core.
    public var eventLoops = 0
    /// Threads for CPU work (image decoding); 0 = one per core.
    public var workerThreads = 0

    public init() {}

    /// IPv4 address to bind.
    public var host: String {
      get { configuration.host }
      set { configuration.host = newValue }
    }
    /// TCP port; 0 asks the kernel for a free one.
    public var port: Int {
      get { configuration.port }
      set { configuration.port = newValue }
    }
    /// Work items that may wait for a worker before requests get 503 + Retry-After.
    public var workerQueueLength: Int {
      get { configuration.workerQueueLength }
      set { configuration.workerQueueLength = newValue }
    }
    /// Open connections at most.
    public var maxConnections: Int {
      get { configuration.maxConnections }
      set { configuration.maxConnections = newValue }
    }
    /// Seconds for the whole request head to arrive (slowloris guard) → 408.
    public var headerTimeout: Double {
      get { Self.seconds(configuration.headerTimeout) }
      set { configuration.headerTimeout = Self.duration(newValue) }
    }
    /// Longest silence, in seconds, in the middle of a request body → 408.
    public var bodyIdleTimeout: Double {
      get { Self.seconds(configuration.bodyIdleTimeout) }
      set { configuration.bodyIdleTimeout = Self.duration(newValue) }
    }
    /// Slowest a request body may arrive, bytes/s averaged over each `minBodyRateWindow`
    /// (0 = no minimum) → 408.
    public var minBodyRate: Int {
      get { configuration.minBodyRate }
      set { configuration.minBodyRate = newValue }
    }
    /// Seconds each `minBodyRate` window lasts.
    public var minBodyRateWindow: Double {
      get { Self.seconds(configuration.minBodyRateWindow) }
      set { configuration.minBodyRateWindow = Self.duration(newValue) }
    }
    /// Seconds a kept-alive connection may wait for its next request.
    public var keepAliveTimeout: Double {
      get { Self.seconds(configuration.keepAliveTimeout) }
      set { configuration.keepAliveTimeout = Self.duration(newValue) }
    }
    /// Seconds a response write may make no progress before the connection is dropped.
    public var writeTimeout: Double {
      get { Self.seconds(configuration.writeTimeout) }
      set { configuration.writeTimeout = Self.duration(newValue) }
    }
    /// Seconds to read and drop what a client still sends after an early answer (413, 408, 400).
    public var lingerTimeout: Double {
      get { Self.seconds(configuration.lingerTimeout) }
      set { configuration.lingerTimeout = Self.duration(newValue) }
    }
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    public var drainDeadline: Double {
      get { Self.seconds(configuration.drainDeadline) }
      set { configuration.drainDeadline = Self.duration(newValue) }
    }
    /// Longest request line (→ 414).
    public var maxRequestLineBytes: Int {
      get { configuration.parserLimits.maxRequestLineBytes }
      set { configuration.parserLimits.maxRequestLineBytes = newValue }
    }
    /// Largest header block (→ 431).
    public var maxHeaderBytes: Int {
      get { configuration.parserLimits.maxHeaderBytes }
      set { configuration.parserLimits.maxHeaderBytes = newValue }
    }
    /// Most header fields (→ 431).
    public var maxHeaderFields: Int {
      get { configuration.parserLimits.maxHeaderFields }
      set { configuration.parserLimits.maxHeaderFields = newValue }
    }
    /// `listen(2)` backlog.
    public var listenBacklog: Int {
      get { Int(configuration.listenBacklog) }
      set { configuration.listenBacklog = Int32(clamping: newValue) }
    }

    public func validate() throws(ConfigurationError) {
      var address = in_addr()
      guard inet_pton(AF_INET, host, &address) == 1 else {
        throw ConfigurationError("server.host must be an IPv4 address such as 127.0.0.1, not \"\(host)\"")
      }
      guard (0...65535).contains(port) else {
        throw ConfigurationError("server.port must be 0…65535, not \(port)")
      }
      for (name, value) in [
        ("headerTimeout", headerTimeout), ("bodyIdleTimeout", bodyIdleTimeout),
        ("keepAliveTimeout", keepAliveTimeout), ("writeTimeout", writeTimeout),
        ("lingerTimeout", lingerTimeout), ("minBodyRateWindow", minBodyRateWindow),
      ] where !(value > 0 && value.isFinite) {
        throw ConfigurationError("server.\(name) must be a positive number of seconds")
      }
      guard drainDeadline >= 0 && drainDeadline.isFinite else {
        throw ConfigurationError("server.drainDeadline must be 0 or more seconds")
      }
      for (name, value, minimum) in [
        ("eventLoops", eventLoops, 0), ("workerThreads", workerThreads, 0),
        ("workerQueueLength", workerQueueLength, 0), ("maxConnections", maxConnections, 1),
        ("maxRequestLineBytes", maxRequestLineBytes, 64), ("maxHeaderBytes", maxHeaderBytes, 256),
        ("maxHeaderFields", maxHeaderFields, 1), ("listenBacklog", listenBacklog, 1),
        ("minBodyRate", minBodyRate, 0),
      ] where value < minimum {
        throw ConfigurationError("server.\(name) must be at least \(minimum), not \(value)")
      }
    }

    /// Seconds as a `Duration`, rounded to the millisecond. Only a program can set a value out of
    /// a `Duration`'s range (the loader takes finite seconds): it is held to the nearest end, NaN
    /// to zero, for `validate` to judge.
    static func duration(_ seconds: Double) -> Duration {
      let milliseconds = (seconds * 1000).rounded()
      if let exact = Int64(exactly: milliseconds) { return .milliseconds(exact) }
      return .milliseconds(milliseconds > 0 ? Int64.max : milliseconds < 0 ? Int64.min : 0)
    }

    /// A `Duration` as seconds.
    static func seconds(_ duration: Duration) -> Double {
      Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
  }
}
