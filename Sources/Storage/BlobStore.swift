import Foundation

/// Content-addressed, immutable blob storage: local files (`FileBlobStore`) or an S3-compatible
/// bucket (`S3BlobStore`).
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

  /// Streams the blob's bytes, or those in `range` (clamped to the blob), to `body` in order, a
  /// chunk at a time, never holding the whole blob; throws `.notFound` when absent.
  ///
  /// `start` is called once before the first chunk (also when no byte follows) with the blob's
  /// size and the range that will be delivered: enough to write a response's headers. A chunk is
  /// valid only during its call. An error `start` or `body` throws stops the read and is
  /// rethrown; an error after `start` means the bytes delivered so far are not the whole range.
  func read(
    _ hash: BlobHash, range: Range<Int>?, start: (BlobReadStart) throws -> Void,
    body: (UnsafeRawBufferPointer) throws -> Void) throws

  /// A local file holding the blob (for `sendfile`), or nil when this store has no local files.
  func path(for hash: BlobHash) -> String?

  /// Removes the blob; returns false when it was not there.
  @discardableResult func delete(_ hash: BlobHash) throws -> Bool

  /// Calls `body` with every stored blob (for sweeping); order unspecified.
  func forEachBlob(_ body: (BlobInfo) throws -> Void) throws

  /// Throws unless a new blob could be written now (for readiness checks).
  func checkWritable() throws
}

/// What a streaming read reports before its first chunk.
public struct BlobReadStart: Sendable, Hashable {
  /// The whole blob's size in bytes.
  public var size: Int
  /// The bytes that will be delivered: the requested range clamped to the blob.
  public var range: Range<Int>

  /// A read of `range` from a blob of `size` bytes.
  public init(size: Int, range: Range<Int>) {
    self.size = size
    self.range = range
  }
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

  /// Streams the blob's bytes (or `range`) to `body`; see `read(_:range:start:body:)`.
  public func read(
    _ hash: BlobHash, range: Range<Int>? = nil, body: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    try read(hash, range: range, start: { _ in }, body: body)
  }
}
