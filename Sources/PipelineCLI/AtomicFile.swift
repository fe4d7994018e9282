import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Writes a whole file or nothing: a temporary file beside the target, fsync, rename, fsync dir.
enum AtomicFile {
  struct Failure: Error, CustomStringConvertible {
    let call: String
    let code: Int32
    var description: String { "\(call): \(String(cString: strerror(code)))" }
  }

  static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
    let url = URL(fileURLWithPath: path)
    let directory = url.deletingLastPathComponent().path
    let temporary =
      directory + "/." + url.lastPathComponent + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw Failure(call: "open", code: errno) }
    var failure: Failure?
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        if n < 0 {
          if errno == EINTR { continue }
          failure = Failure(call: "write", code: errno)
          return
        }
        offset += n
      }
    }
    if failure == nil && fsync(fd) != 0 { failure = Failure(call: "fsync", code: errno) }
    close(fd)
    if failure == nil && rename(temporary, path) != 0 { failure = Failure(call: "rename", code: errno) }
    if let failure {
      unlink(temporary)
      throw failure
    }
    let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if dirfd >= 0 {
      _ = fsync(dirfd)
      close(dirfd)
    }
  }
}
