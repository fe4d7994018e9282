import Foundation

/// Where tests put their files: one directory per test process under the system temp dir,
/// `attachd-tests-PID`, removed when the process exits; a run killed before it could remove its
/// own is removed by the next one (its PID is no longer alive). Before this, every run left
/// ~300 data directories in /tmp (5 GB after a day of runs).
public enum ScratchSpace {
  /// The process's directory, made (and the dead runs' swept) on first use.
  public static var root: String { made.root }

  /// A new empty directory `prefix-XXXXXX` under `parent` (default: `root`).
  public static func directory(_ prefix: String, under parent: String? = nil) throws -> String {
    var template = Array(((parent ?? root) + "/" + prefix + "-XXXXXX").utf8CString)
    guard let path = mkdtemp(&template) else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mkdtemp: errno \(errno)"])
    }
    return String(cString: path)
  }

  /// A path `prefix-UUID.suffix` under `root` where nothing is yet.
  public static func file(_ prefix: String, suffix: String) -> String {
    root + "/\(prefix)-\(UUID().uuidString).\(suffix)"
  }

  private static let made: (root: String, ()) = {
    let parent = NSTemporaryDirectory()
    let own = parent + "/attachd-tests-\(getpid())"
    sweep(parent)
    try? FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: ScratchSpace.root) }
    return (own, ())
  }()

  /// Removes the directories of test processes that are gone.
  private static func sweep(_ parent: String) {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
    for name in names where name.hasPrefix("attachd-tests-") {
      guard let pid = pid_t(name.dropFirst("attachd-tests-".count)), pid != getpid(),
        kill(pid, 0) != 0, errno == ESRCH
      else { continue }
      try? FileManager.default.removeItem(atPath: parent + "/" + name)
    }
  }
}
