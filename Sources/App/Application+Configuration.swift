#if canImport(Glibc)
  import Glibc
#endif

extension Application {
  /// Everything `attachd serve` runs with: defaults, then `Config/attachd.json`, then
  /// `ATTACHD_*` environment variables, then flags (see `ConfigurationLoader`).
  public struct Configuration: Sendable, Equatable {
    public var server = ServerOptions()
    public var storage = StorageOptions()
    public var index = IndexOptions()
    public var auth = Authenticator.Configuration()
    public var limits = LimitOptions()
    public var signing = SignedURL.Configuration()
    public var attachments = AttachmentOptions()
    public var uploads = UploadOptions()
    public var log = LogOptions()
    public var cors = CORSPolicy.Configuration()

    public init() {}

    /// Checks every section; the first problem found is thrown.
    public func validate() throws(ConfigurationError) {
      try server.validate()
      try storage.validate()
      try index.validate()
      // A shared index naming blobs only one node's disk holds would break every other node.
      if storage.backend == .filesystem && index.backend == .postgres {
        throw ConfigurationError(
          "index.backend postgres needs storage.backend s3: blobs in a data directory are one node's alone")
      }
      try auth.validate()
      try limits.validate()
      try signing.validate()
      try attachments.validate()
      try uploads.validate()
      try log.validate()
      try cors.validate()
    }
  }

  /// Where the server listens and the limits it holds (mapped onto `Server.Configuration`).
  public struct ServerOptions: Sendable, Equatable {
    /// IPv4 address to bind.
    public var host = "127.0.0.1"
    /// TCP port; 0 asks the kernel for a free one.
    public var port = 8080
    /// Event loop threads; 0 = one per core.
    public var eventLoops = 0
    /// Threads for CPU work (image decoding); 0 = one per core.
    public var workerThreads = 0
    /// Work items that may wait for a worker before requests get 503 + Retry-After.
    public var workerQueueLength = 64
    /// Open connections at most.
    public var maxConnections = 16_384
    /// Seconds for the whole request head to arrive (slowloris guard) → 408.
    public var headerTimeout = 10.0
    /// Longest silence, in seconds, in the middle of a request body → 408.
    public var bodyIdleTimeout = 30.0
    /// Slowest a request body may arrive, bytes/s averaged over each `minBodyRateWindow`
    /// (0 = no minimum) → 408. Low on purpose: a phone on a bad mobile link must get through.
    public var minBodyRate = 256
    /// Seconds each `minBodyRate` window lasts.
    public var minBodyRateWindow = 60.0
    /// Seconds a kept-alive connection may wait for its next request.
    public var keepAliveTimeout = 15.0
    /// Seconds a response write may make no progress before the connection is dropped.
    public var writeTimeout = 30.0
    /// Seconds to read and drop what a client still sends after an early answer (413, 408, 400)
    /// before closing, so that the client sees the answer rather than a reset.
    public var lingerTimeout = 2.0
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    public var drainDeadline = 10.0
    /// Longest request line (→ 414).
    public var maxRequestLineBytes = 8192
    /// Largest header block (→ 431).
    public var maxHeaderBytes = 65_536
    /// Most header fields (→ 431).
    public var maxHeaderFields = 100
    /// `listen(2)` backlog.
    public var listenBacklog = 1024

    public init() {}

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
  }

  /// Where attachments and the index live.
  public struct StorageOptions: Sendable, Equatable {
    /// Directory for blobs and the index; created at start-up when missing. With the `s3`
    /// backend it holds only this node's temporary files.
    public var dataDirectory = "./data"
    /// Where blobs (and resumable uploads' bytes) go.
    public var backend = BlobBackend.filesystem
    /// The bucket, when `backend` is `s3`.
    public var s3 = S3Options()

    public init() {}

    public func validate() throws(ConfigurationError) {
      guard !dataDirectory.isEmpty else { throw ConfigurationError("storage.dataDir must not be empty") }
      if backend == .s3 { try s3.validate() }
    }
  }

  /// API keys: hashed keys with scopes, and plain `tenant:key` pairs.
  public typealias AuthOptions = Authenticator.Configuration

  /// Where log lines go.
  public struct LogOptions: Sendable, Equatable {
    /// Access log destination: `stdout`, `stderr`, `off`, or a file path (appended to).
    public var access = "stdout"

    public init() {}

    public func validate() throws(ConfigurationError) {
      guard !access.isEmpty else {
        throw ConfigurationError("log.access must be stdout, stderr, off or a file path")
      }
    }
  }
}
