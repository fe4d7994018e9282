import Foundation
import SystemCalls

#if canImport(Glibc)
  import Glibc
#endif

/// Writes a whole file or nothing: a temporary file beside the target, fsync, rename, fsync dir.
enum AtomicFile {
  struct Failure: Error, CustomStringConvertible {
    let call: String
    let code: Int32
    var description: String { "\(call): \(String(cString: strerror(code)))" }

    init(_ error: SystemError) {
      call = error.call
      code = error.errno
    }
  }

  static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
    let url = URL(fileURLWithPath: path)
    let directory = url.deletingLastPathComponent().path
    let temporary =
      directory + "/." + url.lastPathComponent + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd: Int32
    do {
      fd = try SystemCall.blocking("open") { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
    } catch {
      throw Failure(error)
    }
    var failure: Failure?
    /// Makes one call unless an earlier one failed; the first failure is the one reported.
    func step<T: FixedWidthInteger>(_ name: StaticString, _ body: () -> T) -> T? {
      guard failure == nil else { return nil }
      do { return try SystemCall.blocking(name, body) } catch {
        failure = Failure(error)
        return nil
      }
    }
    bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count,
        let n = step("write", { Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset) })
      {
        offset += n
      }
    }
    _ = step("fsync") { fsync(fd) }
    try? SystemCall.close(fd)
    _ = step("rename") { rename(temporary, path) }
    if let failure {
      unlink(temporary)
      throw failure
    }
    // Best effort: the file is in place; this makes its name durable too.
    if let dirfd = try? SystemCall.blocking("open", { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }) {
      _ = try? SystemCall.blocking("fsync") { fsync(dirfd) }
      try? SystemCall.close(dirfd)
    }
  }
}
