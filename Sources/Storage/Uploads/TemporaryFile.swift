import Foundation
import Glibc

/// A file of this process's own on the local disk, unlinked as soon as it is made: nothing is
/// left behind when the process dies, so no start-up cleaning is needed, and no other process
/// (another node sharing the directory) can see or remove it. Closed with the value.
final class TemporaryFile: @unchecked Sendable {
  // The descriptor never changes after init; its I/O is positional (pread/pwrite).
  let descriptor: Int32
  /// For error messages only (the name is gone).
  let label: String

  /// A new empty file in `directory` (which must exist).
  init(directory: String) throws {
    var template = Array((directory + "/attachd-upload-XXXXXX").utf8CString)
    let (fd, path) = template.withUnsafeMutableBufferPointer { buffer in
      let fd = mkstemp(buffer.baseAddress!)
      return (fd, String(cString: buffer.baseAddress!))
    }
    guard fd >= 0 else { throw FileSystem.error("mkstemp", directory, errno: errno) }
    // Not inherited by a child process (mkostemp, which sets it at once, needs _GNU_SOURCE).
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    _ = try? FileSystem.unlink(path)
    descriptor = fd
    label = "temporary file in \(directory)"
  }

  deinit { FileSystem.close(descriptor) }

  /// Writes `bytes` at `offset`.
  func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
    try FileSystem.writeAll(descriptor, bytes, at: offset, path: label)
  }
}
