import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Whether the data directory's volume has room left, for `/readyz`.
///
/// It learns from two things: `statvfs`, asked at every check, and the last write that found
/// the volume full (`noteFull`, called whenever an answer is `storage_full`). The volume counts
/// as full while fewer than `floorBytes` are free, and after a write found no space until
/// `floorBytes` more are free than were then, or `memory` passes without another such write: one
/// body too large for what is left must not keep the node out of its pool for good, and the
/// next write that finds no space puts it back. Nothing needs a restart: space freed by the
/// operator (or by the sweeper's expired uploads) is seen at the next check.
///
/// `statvfs` counts the blocks an unprivileged writer may use (`f_bavail`): on a volume with
/// blocks reserved for root, a server running as root is called full a little early.
public final class VolumeSpace: Sendable {
  /// The directory whose volume is watched.
  public let path: String
  /// Below this many free bytes the volume is full.
  public let floorBytes: Int
  /// How long a write's finding the volume full counts without free space growing.
  public let memory: TimeInterval
  private let lastFull = Mutex<(at: Date, freeBytes: Int)?>(nil)

  public init(path: String, floorBytes: Int = 1 << 20, memory: TimeInterval = 60) {
    self.path = path
    self.floorBytes = floorBytes
    self.memory = memory
  }

  /// Bytes an unprivileged writer may still use on the volume; nil when `statvfs` fails (the
  /// readiness probe's own write then says why).
  public func freeBytes() -> Int? {
    var info = statvfs()
    guard statvfs(path, &info) == 0 else { return nil }
    return Int(info.f_bavail) * Int(info.f_frsize)
  }

  /// A write found the volume full (`ENOSPC`, `EDQUOT`, `SQLITE_FULL`).
  public func noteFull(now: Date = Date()) {
    let free = freeBytes() ?? 0
    lastFull.withLock { $0 = (now, free) }
  }

  /// Nil while the volume has room, else why not (for the log).
  public func problem(now: Date = Date()) -> String? {
    guard let free = freeBytes() else { return nil }
    if free < floorBytes {
      return "the data directory's volume is full: \(free) bytes free, below \(floorBytes)"
    }
    let stillFull = lastFull.withLock { last -> Bool in
      guard let noted = last else { return false }
      if free >= noted.freeBytes + floorBytes || now.timeIntervalSince(noted.at) > memory {
        last = nil
        return false
      }
      return true
    }
    return stillFull ? "the data directory's volume is full: a write found no space, \(free) bytes free" : nil
  }
}
