import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Answers `/readyz`: ready when the data directory takes a new file, its volume is not full
/// and the server is not draining.
public final class Readiness: Sendable {
  public let dataDirectory: String
  /// The data directory's volume: full or not (told by every `storage_full` answer).
  public let volume: VolumeSpace
  private let drainingCheck = Mutex<(@Sendable () -> Bool)?>(nil)
  private let probeCounter = Atomic<UInt64>(0)

  public init(dataDirectory: String) {
    self.dataDirectory = dataDirectory
    self.volume = VolumeSpace(path: dataDirectory)
  }

  /// Tells readiness how to learn that the server is draining (set once the server exists).
  public func setDrainingCheck(_ check: @escaping @Sendable () -> Bool) {
    drainingCheck.withLock { $0 = check }
  }

  /// Nil when ready, else why not.
  public func check() -> AppError? {
    if let isDraining = drainingCheck.withLock({ $0 }), isDraining() { return .draining }
    // Before the probe: an empty file still fits on a full volume.
    if let reason = volume.problem() { return .volumeFull(reason: reason) }
    return probeWrite()
  }

  // Creating (and removing) a real file catches a read-only mount, a full inode table, lost
  // permissions and a vanished directory, which `access(W_OK)` would not all catch.
  private func probeWrite() -> AppError? {
    let n = probeCounter.add(1, ordering: .relaxed).newValue
    let path = "\(dataDirectory)/.readyz-\(getpid())-\(n)"
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      return .notReady(
        reason: "cannot create a file in \(dataDirectory): \(String(cString: strerror(errno)))")
    }
    close(fd)
    unlink(path)
    return nil
  }
}
