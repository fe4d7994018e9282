import Foundation
import Glibc
import Synchronization

/// An upload's spool file and its row in the SQLite index: bytes are written at their offset,
/// `fdatasync`ed at a commit, and only then is the offset committed, so the index never claims
/// a byte that is not on disk.
final class FileUploadSpool: UploadSpool {
  private let index: SQLiteIndex
  private let id: String
  private let token: String
  private let path: String
  private let sync: Bool
  /// The open spool file; -1 once discarded. A mutex only because `discard` may come from a
  /// writer's `deinit`; every other call holds the slot lock.
  private let descriptor: Mutex<Int32>

  /// A spool on the open file `fd` (now owned by the spool) of upload `id`, under lease `token`.
  init(bytes: FileUploadBytes, id: String, token: String, fd: Int32) {
    self.index = bytes.index
    self.id = id
    self.token = token
    self.path = bytes.spoolPath(id)
    self.sync = bytes.syncOffsetCommits
    self.descriptor = Mutex(fd)
  }

  deinit { discard() }

  func write(_ buffer: WriteBuffer, at offset: Int) throws {
    let fd = descriptor.withLock { $0 }
    guard fd >= 0 else { throw StorageError(.invalidArgument, "spool of \(id) is closed") }
    try buffer.write(to: fd, at: offset, path: path)
  }

  func commit(from: Int, to: Int, leaseUntil: Date?) throws -> UploadCommit {
    if to > from {
      let fd = descriptor.withLock { $0 }
      guard fd >= 0 else { throw StorageError(.invalidArgument, "spool of \(id) is closed") }
      try FileSystem.fdatasync(fd, path: path)
    }
    return try index.commitUploadOffset(
      id: id, token: token, from: from, to: to, leaseUntil: leaseUntil, sync: sync)
  }

  func cutBack(to offset: Int) {
    let fd = descriptor.withLock { $0 }
    guard fd >= 0 else { return }
    try? FileSystem.truncate(fd, to: offset, path: path)
  }

  func discard() {
    descriptor.withLock { fd in
      if fd >= 0 { FileSystem.close(fd) }
      fd = -1
    }
  }
}
