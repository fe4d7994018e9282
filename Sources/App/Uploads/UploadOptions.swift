import Storage

extension Application {
  /// The upload engine's `uploads.*` settings: when plain bodies spool to disk, how long
  /// resumable uploads live, memory and durability of a body being written.
  public struct UploadOptions: Sendable, Equatable {
    /// Plain bodies longer than this spool to the upload store instead of memory, by their
    /// `Content-Length` or once a chunked body passes it (4 MiB).
    public var spoolThreshold = 4 << 20
    /// How long a resumable upload lives after its creation, seconds (24 h).
    public var resumableTTL = 86_400.0
    /// Bytes one body buffers before it is written out (256 KiB): the memory one upload costs
    /// while it streams. 200 uploads at once hold at most 200 of these.
    public var writeBufferBytes = 256 << 10
    /// Bytes written between two commits (fdatasync + offset) within one request (8 MiB).
    public var commitBytes = 8 << 20
    /// Seconds received bytes may wait before a commit makes them durable and acknowledged (5):
    /// bounds what a slow client resends after a drop.
    public var commitInterval = 5.0
    /// Whether an offset commit also waits for the index's fsync (see `UploadStoreConfiguration`).
    public var syncOffsetCommits = false
    /// Seconds a writer's lease on an upload lasts without a commit renewing it (60): how long
    /// an upload whose node died stays locked before another node may resume it. A live writer
    /// renews it at every commit and before writing once it is half gone, so a shorter lease
    /// only costs index writes; it must exceed the clock skew between nodes.
    public var leaseDuration = 60.0
    /// Threads for upload file and index work (open, flush, commit, close), off the event loops.
    public var ioThreads = 8

    public init() {}

    public func validate() throws(ConfigurationError) {
      guard spoolThreshold >= 0 else { throw ConfigurationError("uploads.spoolThreshold must be 0 or more") }
      guard resumableTTL >= 1, resumableTTL <= 30 * 86_400 else {
        throw ConfigurationError("uploads.resumableTTL must be 1 s … 30 days")
      }
      guard commitInterval > 0, commitInterval <= 3600 else {
        throw ConfigurationError("uploads.commitInterval must be more than 0 and at most 3600 s")
      }
      guard leaseDuration >= 1, leaseDuration <= 3600 else {
        throw ConfigurationError("uploads.leaseDuration must be 1 … 3600 s")
      }
      guard (1...256).contains(ioThreads) else { throw ConfigurationError("uploads.ioThreads must be 1…256") }
      do {
        try storeConfiguration().validate()
      } catch let error as StorageError {
        throw ConfigurationError(error.detail)
      } catch {
        throw ConfigurationError("uploads: \(error)")
      }
    }

    /// The store's settings these options describe.
    public func storeConfiguration() -> UploadStoreConfiguration {
      UploadStoreConfiguration(
        spoolThreshold: spoolThreshold, resumableLifetime: resumableTTL, writeBufferBytes: writeBufferBytes,
        commitBytes: commitBytes, syncOffsetCommits: syncOffsetCommits, leaseDuration: leaseDuration)
    }
  }
}
