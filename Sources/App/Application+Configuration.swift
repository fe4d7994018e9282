extension Application {
  /// Everything `attachd serve` runs with: defaults, then `Config/attachd.json`, then
  /// `ATTACHD_*` environment variables, then flags (see `ConfigurationLoader`).
  public struct Configuration: Sendable, Equatable {
    public var server = ServerOptions()
    public var storage = StorageOptions()
    public var auth = AuthOptions()
    public var log = LogOptions()

    public init() {}

    /// Checks every section; the first problem found is thrown.
    public func validate() throws(ConfigurationError) {
      try server.validate()
      try storage.validate()
      try auth.validate()
      try log.validate()
    }
  }

  /// Where the server listens.
  public struct ServerOptions: Sendable, Equatable {
    /// Address to bind (IPv4 or IPv6 literal, or `localhost`).
    public var host = "127.0.0.1"
    /// TCP port; 0 asks the kernel for a free one.
    public var port = 8080

    public init() {}

    public func validate() throws(ConfigurationError) {
      guard !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw ConfigurationError("server.host must be a non-empty address")
      }
      guard (0...65535).contains(port) else {
        throw ConfigurationError("server.port must be 0…65535, not \(port)")
      }
    }
  }

  /// Where attachments and the index live.
  public struct StorageOptions: Sendable, Equatable {
    /// Directory for blobs and the index; created at start-up when missing.
    public var dataDirectory = "./data"

    public init() {}

    public func validate() throws(ConfigurationError) {
      guard !dataDirectory.isEmpty else { throw ConfigurationError("storage.dataDir must not be empty") }
    }
  }

  /// API keys (issue 4 adds scopes, hashed keys and rate limits).
  public struct AuthOptions: Sendable, Equatable {
    /// Plain keys with their tenant, e.g. from `ATTACHD_API_KEYS`.
    public var apiKeys: [APIKey] = []

    public init() {}

    public func validate() throws(ConfigurationError) {
      var seen = Set<String>()
      for (index, key) in apiKeys.enumerated() {
        try key.validate(position: index + 1)
        // A key must identify one tenant; a repeated key would make that ambiguous.
        guard seen.insert(key.key).inserted else {
          throw ConfigurationError(
            "auth.apiKeys: entry \(index + 1) (tenant \(key.tenant)) repeats an earlier key")
        }
      }
    }
  }

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
