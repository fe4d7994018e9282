import Foundation

/// The `uploads.*` settings of the upload engine, shared by every `UploadStore` implementation.
public struct UploadStoreConfiguration: Sendable, Hashable {
  /// Plain bodies longer than this (by `Content-Length`, or once a chunked body passes it) are
  /// spooled through the store instead of held in memory (4 MiB). Used by the App, not the store.
  public var spoolThreshold: Int
  /// How long a resumable upload lives after creation unless the adapter says otherwise (24 h).
  public var resumableLifetime: TimeInterval
  /// Bytes one writer buffers before it asks for a flush (1 MiB): the memory one upload costs.
  public var writeBufferBytes: Int
  /// Bytes written out between two commits within one request (8 MiB): the commit granularity.
  /// A commit is an `fdatasync` of the data then an index commit (itself an fsync with SQLite's
  /// `synchronous = FULL`), so this bounds the fsyncs per byte; the end of a request and a
  /// takeover always commit. A crash loses at most this much of a request in flight (the
  /// client resends it); 0 commits at every flush.
  public var commitBytes: Int
  /// Whether an offset commit also waits for the index's own fsync (off by default).
  ///
  /// Off: a commit is one `fdatasync` of the data, then the offset is written to the index
  /// without waiting for it to reach the disk (SQLite `synchronous = NORMAL` for that statement).
  /// A process crash loses nothing. A power loss can take an offset back to an earlier commit,
  /// never past bytes on disk (the data is synced before the offset is written), so a client
  /// resends the difference. On: the offset survives power loss too, at a second fsync per
  /// commit (about half the append throughput, measured). Creation, completion, results and
  /// deletion are always as durable as the index.
  public var syncOffsetCommits: Bool
  /// How long a writer's lease lasts without a flush renewing it (60 s). Matters across
  /// processes only: in one process a takeover is immediate.
  public var leaseDuration: TimeInterval
  /// How long `openWriter` waits for a holder in another process to release the lease (10 s).
  public var takeoverTimeout: TimeInterval
  /// How often that wait looks at the lease again (50 ms).
  public var takeoverPollInterval: TimeInterval
  /// The most metadata bytes an upload may carry (16 KiB); more is `.invalidArgument`.
  public var maxMetadataBytes: Int

  /// The defaults.
  public init(
    spoolThreshold: Int = 4 << 20, resumableLifetime: TimeInterval = 86_400, writeBufferBytes: Int = 1 << 20,
    commitBytes: Int = 8 << 20, syncOffsetCommits: Bool = false, leaseDuration: TimeInterval = 60,
    takeoverTimeout: TimeInterval = 10,
    takeoverPollInterval: TimeInterval = 0.05,
    maxMetadataBytes: Int = 16 << 10
  ) {
    self.spoolThreshold = spoolThreshold
    self.resumableLifetime = resumableLifetime
    self.writeBufferBytes = writeBufferBytes
    self.commitBytes = commitBytes
    self.syncOffsetCommits = syncOffsetCommits
    self.leaseDuration = leaseDuration
    self.takeoverTimeout = takeoverTimeout
    self.takeoverPollInterval = takeoverPollInterval
    self.maxMetadataBytes = maxMetadataBytes
  }

  /// Throws `.invalidArgument` naming the first setting that cannot work.
  public func validate() throws {
    try StorageError.require(spoolThreshold >= 0, "uploads.spoolThreshold must be 0 or more")
    try StorageError.require(resumableLifetime >= 1, "uploads.resumableLifetime must be at least 1 s")
    // Below 4 KiB a flush per page-sized slice would fsync on almost every read.
    try StorageError.require(
      (4 << 10)...(256 << 20) ~= writeBufferBytes, "uploads.writeBufferBytes must be 4 KiB … 256 MiB")
    try StorageError.require(commitBytes >= 0, "uploads.commitBytes must be 0 or more")
    try StorageError.require(leaseDuration >= 1, "uploads.leaseDuration must be at least 1 s")
    try StorageError.require(takeoverTimeout >= 0, "uploads.takeoverTimeout must be 0 or more")
    try StorageError.require(
      takeoverPollInterval > 0 && takeoverPollInterval <= 5,
      "uploads.takeoverPollInterval must be in (0, 5] s")
    try StorageError.require(maxMetadataBytes >= 0, "uploads.maxMetadataBytes must be 0 or more")
  }
}
