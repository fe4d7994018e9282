import Foundation

/// Content-addressed, immutable blob storage (local files today; S3-compatible later).
///
/// Every method may be called from many threads at once. Errors are `StorageError`.
public protocol BlobStore: Sendable {
  /// Stores `bytes` under their SHA-256 and returns it; `sha256`, when given, must be that hash.
  ///
  /// Content already present is not written again. Once this returns, the blob is durable.
  func put(_ bytes: UnsafeRawBufferPointer, sha256: BlobHash?) throws -> BlobHash

  /// Stores the contents of the file at `path` (hashed while copied) and returns their hash.
  func put(fileAt path: String) throws -> BlobHash

  /// True when a blob with this hash is stored.
  func exists(_ hash: BlobHash) throws -> Bool

  /// The blob's size in bytes; throws `.notFound` when absent.
  func size(of hash: BlobHash) throws -> Int

  /// The blob's bytes, or the bytes in `range` (clamped to the blob); throws `.notFound` when absent.
  func read(_ hash: BlobHash, range: Range<Int>?) throws -> [UInt8]

  /// A local file holding the blob (for `sendfile`), or nil when this store has no local files.
  func path(for hash: BlobHash) -> String?

  /// Removes the blob; returns false when it was not there.
  @discardableResult func delete(_ hash: BlobHash) throws -> Bool

  /// Calls `body` with every stored blob (for sweeping); order unspecified.
  func forEachBlob(_ body: (BlobInfo) throws -> Void) throws

  /// Throws unless a new blob could be written now (for readiness checks).
  func checkWritable() throws
}

/// One stored blob as seen by a listing.
public struct BlobInfo: Sendable, Hashable {
  /// The content address.
  public var hash: BlobHash
  /// Size in bytes.
  public var size: Int
  /// When the blob was last written or re-put (deduplicated); guards the sweeper's grace period.
  public var modified: Date

  /// A listing entry.
  public init(hash: BlobHash, size: Int, modified: Date) {
    self.hash = hash
    self.size = size
    self.modified = modified
  }
}

extension BlobStore {
  /// Stores an array's bytes; see `put(_:sha256:)`.
  public func put(_ bytes: [UInt8], sha256: BlobHash? = nil) throws -> BlobHash {
    try bytes.withUnsafeBytes { try put($0, sha256: sha256) }
  }

  /// Stores `Data`'s bytes; see `put(_:sha256:)`.
  public func put(_ data: Data, sha256: BlobHash? = nil) throws -> BlobHash {
    try data.withUnsafeBytes { try put($0, sha256: sha256) }
  }

  /// The whole blob.
  public func read(_ hash: BlobHash) throws -> [UInt8] { try read(hash, range: nil) }
}
