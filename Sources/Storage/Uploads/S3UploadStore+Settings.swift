import Foundation

extension S3UploadStore {
  /// Where in the bucket uploads go and how they are cut.
  public struct Settings: Sendable, Hashable {
    /// Put before every key: ends in `/`, and must not be (or be under) the blobs' prefix.
    public var keyPrefix: String
    /// Bytes per part (5 MiB). An upload whose maximum would need more than 9 999 parts uses
    /// larger parts (whole MiB), so the last part always has a number left.
    public var partSize: Int
    /// A local directory for the partial parts of writers and downloaded bodies (unlinked files).
    public var temporaryDirectory: String
    /// This process's name in lease tokens: stable across its restarts, unique among the
    /// processes running at once (the App uses `host:port`).
    public var node: String
    /// How old an object or multipart upload no row owns must be before it is removed (1 h).
    public var orphanGrace: TimeInterval
    /// How often `deleteExpired` looks for such leftovers (1 h).
    public var orphanSweepInterval: TimeInterval

    /// Settings with the defaults.
    public init(
      keyPrefix: String = "uploads/", partSize: Int = S3Client.minimumPartSize, temporaryDirectory: String,
      node: String, orphanGrace: TimeInterval = 3_600, orphanSweepInterval: TimeInterval = 3_600
    ) {
      self.keyPrefix = keyPrefix
      self.partSize = partSize
      self.temporaryDirectory = temporaryDirectory
      self.node = node
      self.orphanGrace = orphanGrace
      self.orphanSweepInterval = orphanSweepInterval
    }

    /// Throws `.invalidArgument` naming the first setting that cannot work.
    public func validate() throws {
      try StorageError.require(
        keyPrefix.hasSuffix("/") && !keyPrefix.hasPrefix("/") && keyPrefix.utf8.count <= 512,
        "s3 uploads: keyPrefix must end in / (not start with it), ≤ 512 bytes")
      try StorageError.require(
        (S3Client.minimumPartSize...S3Client.maximumPartSize).contains(partSize),
        "s3 uploads: partSize must be 5 MiB … 5 GiB")
      try StorageError.require(!temporaryDirectory.isEmpty, "s3 uploads: temporaryDirectory must be set")
      try StorageError.require(
        !node.isEmpty && node.utf8.count <= 200 && !node.contains("."),
        "s3 uploads: node must be 1-200 characters without '.'")
      try StorageError.require(
        orphanGrace >= 0 && orphanGrace.isFinite, "s3 uploads: orphanGrace must be 0 or more seconds")
      try StorageError.require(
        orphanSweepInterval > 0 && orphanSweepInterval.isFinite,
        "s3 uploads: orphanSweepInterval must be positive")
    }
  }
}
