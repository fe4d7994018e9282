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
    public var sandbox = SandboxOptions()
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
      try sandbox.validate()
      try log.validate()
      try cors.validate()
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
