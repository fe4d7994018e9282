import Foundation
import Glibc
import SystemCalls

/// The file-system calls the blob store makes, each through `SystemCall` (retried on EINTR) and
/// turned into `StorageError`.
enum FileSystem {
  /// Runs `body` until it is not interrupted; a failure becomes a `.io` (or `.notFound`) error.
  @discardableResult
  static func call<T: FixedWidthInteger>(_ name: StaticString, _ path: String, _ body: () -> T) throws -> T {
    do { return try SystemCall.blocking(name, body) } catch { throw self.error(error, path) }
  }

  static func error(_ error: SystemError, _ path: String) -> StorageError {
    self.error(error.call, path, errno: error.errno)
  }

  static func error(_ name: String, _ path: String, errno code: Int32) -> StorageError {
    let message = String(cString: strerror(code))
    return StorageError(self.code(errno: code), "\(name)(\(path)): \(message) (errno \(code))")
  }

  /// The storage code of a failed call's `errno`: a missing file, a full volume (no blocks, or
  /// the user's quota used up: the client may retry once space is freed), or any other I/O error.
  static func code(errno code: Int32) -> StorageError.Code {
    switch code {
    case ENOENT: .notFound
    case ENOSPC, EDQUOT: .full
    default: .io
    }
  }

  static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws -> Int32 {
    try call("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
  }

  /// Closes `fd`, ignoring failures (the descriptor is gone either way).
  static func close(_ fd: Int32) { try? SystemCall.close(fd) }

  /// Writes the whole buffer, looping over short writes.
  static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
    var offset = 0
    while offset < bytes.count {
      let written = try call("write", path) {
        Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
      }
      offset += written
    }
  }

  /// Writes the whole buffer at `offset`, looping over short writes.
  static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws {
    var done = 0
    while done < bytes.count {
      let written = try call("pwrite", path) {
        Glibc.pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
      }
      done += written
    }
  }

  /// Reads up to `count` bytes at `offset`, looping over short reads; stops early at end of file.
  static func readAll(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String)
    throws -> Int
  {
    var done = 0
    while done < buffer.count {
      let read = try call("pread", path) {
        Glibc.pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
      }
      if read == 0 { break }
      done += read
    }
    return done
  }

  static func fsync(_ fd: Int32, path: String) throws {
    try call("fsync", path) { Glibc.fsync(fd) }
  }

  /// Makes the file's data (and the size needed to read it back) durable, not its times.
  static func fdatasync(_ fd: Int32, path: String) throws {
    try call("fdatasync", path) { Glibc.fdatasync(fd) }
  }

  static func truncate(_ fd: Int32, to length: Int, path: String) throws {
    try call("ftruncate", path) { Glibc.ftruncate(fd, off_t(length)) }
  }

  /// Makes a directory's entries (a rename, a new file or subdirectory) durable.
  static func fsyncDirectory(_ path: String) throws {
    let fd = try open(path, O_RDONLY | O_DIRECTORY)
    defer { close(fd) }
    try fsync(fd, path: path)
  }

  static func rename(_ from: String, _ to: String) throws {
    try call("rename", to) { Glibc.rename(from, to) }
  }

  /// Removes a file; false when it did not exist.
  static func unlink(_ path: String) throws -> Bool {
    do {
      try call("unlink", path) { Glibc.unlink(path) }
      return true
    } catch let error as StorageError where error.code == .notFound {
      return false
    }
  }

  /// Creates a directory; false when it already existed.
  static func makeDirectory(_ path: String) throws -> Bool {
    do {
      _ = try SystemCall.blocking("mkdir") { Glibc.mkdir(path, 0o755) }
      return true
    } catch let error where error.errno == EEXIST {
      return false
    } catch {
      throw self.error(error, path)
    }
  }

  /// The file's status, or nil when it does not exist.
  static func status(_ path: String) throws -> stat? {
    var info = stat()
    do {
      try call("stat", path) { fstatat(AT_FDCWD, path, &info, 0) }
      return info
    } catch let error as StorageError where error.code == .notFound {
      return nil
    }
  }

  static func status(_ fd: Int32, path: String) throws -> stat {
    var info = stat()
    try call("fstat", path) { Glibc.fstat(fd, &info) }
    return info
  }

  /// Sets the file's access and modification times to now.
  static func touch(_ path: String) throws {
    try call("utimensat", path) { Glibc.utimensat(AT_FDCWD, path, nil, 0) }
  }

  /// The names in a directory (without "." and ".."); empty when it does not exist.
  static func list(_ path: String) throws -> [String] {
    guard let directory = opendir(path) else {
      let code = errno
      if code == ENOENT { return [] }
      throw error("opendir", path, errno: code)
    }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  static func modificationDate(_ info: stat) -> Date {
    Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
  }
}
