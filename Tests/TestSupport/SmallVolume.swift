import Foundation
import Glibc

/// A file system of the test's own: a size-limited tmpfs mounted on a fresh directory, that a
/// test fills to the last block with a filler file and frees again. Mounting needs root (or
/// CAP_SYS_ADMIN); `canMount` says whether this process may.
public final class SmallVolume {
  /// Where the tmpfs is mounted.
  public let path: String
  /// The file that fills the volume (`fill`), removed by `free`.
  public var fillerPath: String { path + "/filler" }
  private var mounted = true

  /// Mounts a tmpfs of `megabytes` MiB on a new directory under the tests' scratch space.
  public init(megabytes: Int) throws {
    path = try ScratchSpace.directory("small-volume")
    let outcome = try ChildProcess.run(
      "/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tmpfs", path], timeout: 10,
      checked: false)
    guard outcome.status == 0 else {
      throw ChildProcess.Failure(description: "mount tmpfs on \(path): \(outcome.output)")
    }
  }

  deinit { unmount() }

  /// Whether this process may mount a tmpfs (tried once, on a 1 MiB one).
  public static let canMount: Bool = {
    guard let volume = try? SmallVolume(megabytes: 1) else { return false }
    volume.unmount()
    return true
  }()

  /// Detaches the tmpfs (lazily: a descriptor still open in the server does not keep it from
  /// going) and removes the directory. Idempotent.
  public func unmount() {
    guard mounted else { return }
    mounted = false
    _ = try? ChildProcess.run("/bin/umount", ["-l", path], timeout: 10, checked: false)
    rmdir(path)
  }

  /// Bytes still free on the volume.
  public var freeBytes: Int {
    var info = statvfs()
    guard statvfs(path, &info) == 0 else { return -1 }
    return Int(info.f_bavail) * Int(info.f_frsize)
  }

  /// Writes (more of) the filler until the volume has no block left (`ENOSPC`); returns the
  /// filler's size.
  @discardableResult
  public func fill() throws -> Int {
    let fd = open(fillerPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw ChildProcess.Failure(description: "open \(fillerPath): errno \(errno)") }
    defer { close(fd) }
    let chunk = [UInt8](repeating: 0xA5, count: 64 << 10)
    var size = Int(lseek(fd, 0, SEEK_END))
    // Smaller and smaller writes take the last partial chunk too.
    var length = chunk.count
    while length > 0 {
      let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, length) }
      if written > 0 {
        size += written
      } else if written < 0 && errno == EINTR {
        continue
      } else if written < 0 && errno != ENOSPC {
        throw ChildProcess.Failure(description: "write \(fillerPath): errno \(errno)")
      } else {
        length /= 2
      }
    }
    return size
  }

  /// Fills the volume, then gives `bytes` back (rounded to the volume's pages).
  public func fill(leaving bytes: Int) throws {
    let size = try fill()
    guard truncate(fillerPath, off_t(max(0, size - bytes))) == 0 else {
      throw ChildProcess.Failure(description: "truncate \(fillerPath): errno \(errno)")
    }
  }

  /// Removes the filler: the volume has room again.
  public func free() {
    unlink(fillerPath)
  }
}
