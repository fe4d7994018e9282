private import Crypto
import Foundation

/// Blobs as objects in an S3-compatible bucket, content-addressed and sharded like
/// `FileBlobStore`: `<keyPrefix>ab/cd/<sha256>`, so a `FileBlobStore`'s `blobs/` directory copies
/// to the bucket under the default prefix `blobs/` as it is.
///
/// A PUT is atomic in S3 (an object is all there or not there) and durable once acknowledged, so
/// there is no temporary name. A blob already present is not uploaded again; its Last-Modified
/// date is renewed with a server-side self-copy when older than `refreshAge`, which keeps the
/// promise of `BlobInfo.modified` (a re-put protects the blob from the sweeper for its grace
/// period) at the cost of one extra request only for old blobs.
///
/// Failures are `StorageError`s: `.notFound`, `.unavailable` (the object store did not answer,
/// timed out or kept failing with 5xx: worth a 503 with `Retry-After`), or `.io`.
public final class S3BlobStore: BlobStore {
  /// The bucket and how blobs are named in it.
  public struct Configuration: Sendable, CustomStringConvertible {
    /// Endpoint, bucket, credentials, timeouts and retries.
    public var client: S3Client.Configuration
    /// Put before every key: empty, or ending in `/` (default `blobs/`).
    public var keyPrefix: String
    /// How old a present blob's Last-Modified may be before a re-put renews it (10 minutes); must
    /// stay well under the sweeper's grace period (`AttachmentStore.Configuration.sweepGrace`).
    public var refreshAge: TimeInterval

    /// A configuration with the default prefix and refresh age.
    public init(client: S3Client.Configuration, keyPrefix: String = "blobs/", refreshAge: TimeInterval = 600)
    {
      self.client = client
      self.keyPrefix = keyPrefix
      self.refreshAge = refreshAge
    }

    /// Throws `.invalidArgument` for settings that cannot work.
    public func validate() throws {
      try client.validate()
      // A prefix without the final slash would also list another prefix's blobs ("blobs2/…").
      guard keyPrefix.isEmpty || (keyPrefix.hasSuffix("/") && !keyPrefix.hasPrefix("/")),
        keyPrefix.utf8.count <= 512
      else {
        throw StorageError(
          .invalidArgument, "s3: keyPrefix must be empty or end in / (not start with it), ≤ 512 bytes")
      }
      guard refreshAge >= 0, refreshAge.isFinite else {
        throw StorageError(.invalidArgument, "s3: refreshAge must be a finite number of seconds ≥ 0")
      }
    }

    public var description: String {
      "S3BlobStore(\(client), keyPrefix: \(keyPrefix), refreshAge: \(refreshAge))"
    }
  }

  /// The settings this store was opened with.
  public let configuration: Configuration
  /// The client underneath (its connections are shared with anyone else using it).
  public let client: S3Client

  /// A store over the configured bucket (validated here). No request is made: the bucket must
  /// exist, and `checkWritable` tells whether it can be written.
  public init(configuration: Configuration) throws {
    try configuration.validate()
    self.configuration = configuration
    self.client = try S3Client(configuration: configuration.client)
  }

  /// The object key of a blob.
  public func key(for hash: BlobHash) -> String {
    let hex = hash.hex.utf8
    let first = String(decoding: hex.prefix(2), as: UTF8.self)
    let second = String(decoding: hex.dropFirst(2).prefix(2), as: UTF8.self)
    return "\(configuration.keyPrefix)\(first)/\(second)/\(hash.hex)"
  }

  public func put(_ bytes: UnsafeRawBufferPointer, sha256: BlobHash?) throws -> BlobHash {
    let hash = sha256 ?? BlobHash.of(bytes)
    if try refreshIfPresent(hash) { return hash }
    // The blob's address is its SHA-256, which is also the payload hash S3 checks the bytes against.
    try client.putObject(key(for: hash), body: .bytes(bytes), sha256: hash.hex)
    return hash
  }

  public func put(fileAt path: String) throws -> BlobHash {
    // Hashed first (the key is the hash), then uploaded: the file is read twice.
    let hash = try Self.hashFile(path)
    if try refreshIfPresent(hash) { return hash }
    try client.putObject(key(for: hash), body: .file(path: path), sha256: hash.hex)
    return hash
  }

  public func exists(_ hash: BlobHash) throws -> Bool {
    try client.headObject(key(for: hash)) != nil
  }

  public func size(of hash: BlobHash) throws -> Int {
    guard let info = try client.headObject(key(for: hash)) else {
      throw StorageError(.notFound, "blob \(hash)")
    }
    return info.size
  }

  public func read(_ hash: BlobHash, range: Range<Int>?) throws -> [UInt8] {
    var bytes: [UInt8] = []
    try read(
      hash, range: range, start: { bytes.reserveCapacity($0.range.count) },
      body: { bytes.append(contentsOf: $0) })
    return bytes
  }

  public func read(
    _ hash: BlobHash, range: Range<Int>?, start: (BlobReadStart) throws -> Void,
    body: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    do {
      try client.getObject(
        key(for: hash), range: range,
        start: { try start(BlobReadStart(size: $0.objectSize, range: $0.range)) },
        body: body)
    } catch let error as StorageError where error.code == .notFound {
      throw StorageError(.notFound, "blob \(hash)")
    }
  }

  /// Always nil: nothing is on a local disk.
  public func path(for hash: BlobHash) -> String? { nil }

  @discardableResult public func delete(_ hash: BlobHash) throws -> Bool {
    // S3's DELETE answers alike whether or not the object was there; HEAD tells.
    let key = self.key(for: hash)
    guard try client.headObject(key) != nil else { return false }
    try client.deleteObject(key)
    return true
  }

  public func forEachBlob(_ body: (BlobInfo) throws -> Void) throws {
    let prefix = configuration.keyPrefix
    try client.forEachObject(prefix: prefix) { object in
      // Only keys of the shape this store writes count: `ab/cd/<hash>` with matching shards.
      let name = object.key.utf8.dropFirst(prefix.utf8.count)
      guard name.count == 70, let hash = BlobHash(hex: String(decoding: name.dropFirst(6), as: UTF8.self)),
        key(for: hash) == object.key
      else { return }
      try body(BlobInfo(hash: hash, size: object.size, modified: object.lastModified))
    }
  }

  public func checkWritable() throws {
    // A tiny object of its own name (never mistaken for a blob by `forEachBlob`), then removed.
    let key = "\(configuration.keyPrefix)writable-checks/\(Hex.encode(SecureRandom.bytes(12)))"
    _ = try [UInt8(ascii: "1")].withUnsafeBytes { try client.putObject(key, body: .bytes($0)) }
    try client.deleteObject(key)
  }

  // MARK: - Internals

  /// True when the blob is already stored; its Last-Modified is renewed first when older than
  /// `refreshAge`, so that the sweeper's grace period protects it until the caller's index row
  /// refers to it.
  private func refreshIfPresent(_ hash: BlobHash) throws -> Bool {
    let key = self.key(for: hash)
    guard let info = try client.headObject(key) else { return false }
    guard Date().timeIntervalSince(info.lastModified) >= configuration.refreshAge else { return true }
    do {
      try client.copyObject(from: key, to: key)
    } catch let error as StorageError where error.code == .notFound {
      return false  // swept between HEAD and copy: upload it again
    }
    return true
  }

  private static func hashFile(_ path: String) throws -> BlobHash {
    let descriptor = try FileSystem.open(path, O_RDONLY)
    defer { FileSystem.close(descriptor) }
    let hasher = SHA256()
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    defer { chunk.deallocate() }
    var offset = 0
    while true {
      let count = try FileSystem.readAll(descriptor, into: chunk, at: offset, path: path)
      if count == 0 { break }
      hasher.update(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
      offset += count
    }
    return BlobHash(digest: hasher.finalize())!
  }
}
