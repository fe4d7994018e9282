private import Crypto
import Foundation
import Glibc

/// Blobs as files under `root`, content-addressed and sharded: `blobs/ab/cd/<sha256>`.
///
/// A blob is written to `tmp/` (same file system), fsynced, renamed into place and its
/// directory fsynced, so a name under `blobs/` always holds the complete bytes, and a put
/// that returned survives a crash or power loss. `tmp/` leftovers of a crash are removed when
/// the store is opened. No lock is taken around file I/O: concurrent puts of the same content
/// both rename a complete file onto the same name, which is atomic and harmless.
public final class FileBlobStore: BlobStore {
  /// The store's directory.
  public let root: String
  /// How many temporary files from an earlier run were removed when this store was opened.
  public let removedTemporaryFiles: Int

  private let blobsDirectory: String
  private let temporaryDirectory: String
  private let crashPoint: CrashPoint?

  /// Where a test makes `put` stop as if the process had died (test hook).
  enum CrashPoint: Sendable {
    /// After the temporary file is written and fsynced, before the rename.
    case afterTemporaryWrite
    /// After the rename, before the directory fsync.
    case afterRename
  }

  /// Thrown at a `CrashPoint`; everything written so far is left as a crash would leave it.
  struct SimulatedCrash: Error {}

  /// Opens (creating if needed) a store in `root` and removes temporary files left by a crash.
  public convenience init(root: String) throws {
    try self.init(root: root, crashPoint: nil)
  }

  init(root: String, crashPoint: CrashPoint?) throws {
    self.root = root
    self.blobsDirectory = root + "/blobs"
    self.temporaryDirectory = root + "/tmp"
    self.crashPoint = crashPoint
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    _ = try FileSystem.makeDirectory(blobsDirectory)
    _ = try FileSystem.makeDirectory(temporaryDirectory)
    // Anything in tmp/ is an unfinished put of an earlier process: never visible, safe to drop.
    var removed = 0
    for name in try FileSystem.list(temporaryDirectory) {
      if try FileSystem.unlink(temporaryDirectory + "/" + name) { removed += 1 }
    }
    self.removedTemporaryFiles = removed
    try FileSystem.fsyncDirectory(root)
  }

  public func put(_ bytes: UnsafeRawBufferPointer, sha256: BlobHash?) throws -> BlobHash {
    let hash = sha256 ?? BlobHash.of(bytes)
    if try refreshIfPresent(hash) { return hash }
    let temporary = try writeTemporary { fd, path in
      try FileSystem.writeAll(fd, bytes, path: path)
    }
    try commit(temporary, as: hash)
    return hash
  }

  public func put(fileAt path: String) throws -> BlobHash {
    let source = try FileSystem.open(path, O_RDONLY)
    defer { FileSystem.close(source) }
    let hasher = SHA256()
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    defer { chunk.deallocate() }
    var offset = 0
    let temporary = try writeTemporary { fd, temporaryPath in
      while true {
        let count = try FileSystem.readAll(source, into: chunk, at: offset, path: path)
        if count == 0 { break }
        let filled = UnsafeRawBufferPointer(rebasing: chunk[0..<count])
        hasher.update(filled)
        try FileSystem.writeAll(fd, filled, path: temporaryPath)
        offset += count
      }
    }
    let hash = BlobHash(digest: hasher.finalize())!
    let present: Bool
    do {
      present = try refreshIfPresent(hash)
    } catch {
      _ = try? FileSystem.unlink(temporary)
      throw error
    }
    if present {
      _ = try? FileSystem.unlink(temporary)
      return hash
    }
    try commit(temporary, as: hash)
    return hash
  }

  public func exists(_ hash: BlobHash) throws -> Bool {
    try FileSystem.status(finalPath(hash)) != nil
  }

  public func size(of hash: BlobHash) throws -> Int {
    guard let info = try FileSystem.status(finalPath(hash)) else {
      throw StorageError(.notFound, "blob \(hash)")
    }
    return Int(info.st_size)
  }

  public func read(_ hash: BlobHash, range: Range<Int>?) throws -> [UInt8] {
    let path = finalPath(hash)
    let fd = try FileSystem.open(path, O_RDONLY)
    defer { FileSystem.close(fd) }
    let size = Int(try FileSystem.status(fd, path: path).st_size)
    let wanted = (range ?? 0..<size).clamped(to: 0..<size)
    return try [UInt8](unsafeUninitializedCapacity: wanted.count) { buffer, initialized in
      initialized = try FileSystem.readAll(
        fd, into: UnsafeMutableRawBufferPointer(buffer), at: wanted.lowerBound, path: path)
      guard initialized == wanted.count else {
        throw StorageError(.corrupt, "blob \(hash) shorter than its size")
      }
    }
  }

  public func read(
    _ hash: BlobHash, range: Range<Int>?, start: (BlobReadStart) throws -> Void,
    body: (UnsafeRawBufferPointer) throws -> Void
  ) throws {
    let path = finalPath(hash)
    let fd = try FileSystem.open(path, O_RDONLY)
    defer { FileSystem.close(fd) }
    let size = Int(try FileSystem.status(fd, path: path).st_size)
    let wanted = (range ?? 0..<size).clamped(to: 0..<size)
    try start(BlobReadStart(size: size, range: wanted))
    let chunk = UnsafeMutableRawBufferPointer.allocate(
      byteCount: min(Self.streamChunkSize, max(1, wanted.count)), alignment: 16)
    defer { chunk.deallocate() }
    var offset = wanted.lowerBound
    while offset < wanted.upperBound {
      let space = UnsafeMutableRawBufferPointer(
        rebasing: chunk[0..<min(chunk.count, wanted.upperBound - offset)])
      let count = try FileSystem.readAll(fd, into: space, at: offset, path: path)
      guard count == space.count else { throw StorageError(.corrupt, "blob \(hash) shorter than its size") }
      try body(UnsafeRawBufferPointer(space))
      offset += count
    }
  }

  // Large enough that a read costs few system calls, small enough to stay in cache.
  private static let streamChunkSize = 256 * 1024

  public func path(for hash: BlobHash) -> String? { finalPath(hash) }

  @discardableResult public func delete(_ hash: BlobHash) throws -> Bool {
    try FileSystem.unlink(finalPath(hash))
  }

  public func forEachBlob(_ body: (BlobInfo) throws -> Void) throws {
    for first in try FileSystem.list(blobsDirectory) where first.utf8.count == 2 {
      let firstPath = blobsDirectory + "/" + first
      for second in try FileSystem.list(firstPath) where second.utf8.count == 2 {
        let secondPath = firstPath + "/" + second
        for name in try FileSystem.list(secondPath) {
          guard let hash = BlobHash(hex: name) else { continue }
          // A blob deleted between listing and stat is simply no longer there.
          guard let info = try FileSystem.status(secondPath + "/" + name) else { continue }
          try body(BlobInfo(hash: hash, size: Int(info.st_size), modified: FileSystem.modificationDate(info)))
        }
      }
    }
  }

  public func checkWritable() throws {
    let temporary = try writeTemporary { fd, path in
      try [UInt8](repeating: 0, count: 1).withUnsafeBytes { try FileSystem.writeAll(fd, $0, path: path) }
    }
    _ = try FileSystem.unlink(temporary)
  }

  // MARK: - Internals

  private func finalPath(_ hash: BlobHash) -> String {
    let hex = hash.hex.utf8
    let first = String(decoding: hex.prefix(2), as: UTF8.self)
    let second = String(decoding: hex.dropFirst(2).prefix(2), as: UTF8.self)
    return "\(blobsDirectory)/\(first)/\(second)/\(hash.hex)"
  }

  /// True when the blob is already stored; its mtime is then renewed so that the sweeper's
  /// grace period protects it until the caller's index row refers to it.
  private func refreshIfPresent(_ hash: BlobHash) throws -> Bool {
    let path = finalPath(hash)
    guard try FileSystem.status(path) != nil else { return false }
    do {
      try FileSystem.touch(path)
    } catch let error as StorageError where error.code == .notFound {
      return false  // swept between stat and touch: write it again
    }
    return true
  }

  /// Creates a uniquely named file in `tmp/`, lets `body` fill it, fsyncs and closes it.
  private func writeTemporary(_ body: (Int32, String) throws -> Void) throws -> String {
    let path = "\(temporaryDirectory)/\(Hex.encode(SecureRandom.bytes(12))).tmp"
    // Read-only for everyone: a stored blob is never modified in place.
    let fd = try FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o444)
    var closed = false
    do {
      try body(fd, path)
      try FileSystem.fsync(fd, path: path)
      FileSystem.close(fd)
      closed = true
    } catch {
      if !closed { FileSystem.close(fd) }
      _ = try? FileSystem.unlink(path)
      throw error
    }
    return path
  }

  /// Renames a complete, fsynced temporary file to the blob's final name and makes it durable.
  private func commit(_ temporary: String, as hash: BlobHash) throws {
    if crashPoint == .afterTemporaryWrite { throw SimulatedCrash() }
    do {
      let shard = try makeShardDirectories(hash)
      try FileSystem.rename(temporary, finalPath(hash))
      if crashPoint == .afterRename { throw SimulatedCrash() }
      try FileSystem.fsyncDirectory(shard)
    } catch let error as StorageError {
      _ = try? FileSystem.unlink(temporary)
      throw error
    }
  }

  /// Creates `blobs/ab` and `blobs/ab/cd` as needed, fsyncing each parent that gained an entry.
  private func makeShardDirectories(_ hash: BlobHash) throws -> String {
    let hex = hash.hex.utf8
    let first = "\(blobsDirectory)/\(String(decoding: hex.prefix(2), as: UTF8.self))"
    let second = "\(first)/\(String(decoding: hex.dropFirst(2).prefix(2), as: UTF8.self))"
    if try FileSystem.makeDirectory(first) { try FileSystem.fsyncDirectory(blobsDirectory) }
    if try FileSystem.makeDirectory(second) { try FileSystem.fsyncDirectory(first) }
    return second
  }
}
