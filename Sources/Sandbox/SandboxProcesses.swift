import Foundation

/// Reading the sandbox's processes from outside, through /proc (for `sandbox check` and the
/// tests): a helper's descendants, a process's status fields and open descriptors.
public enum SandboxProcesses {
  /// Every descendant of `pid`, parents before children (needs /proc/<pid>/task/*/children).
  public static func descendants(of pid: Int32) -> [Int32] {
    var found: [Int32] = []
    var queue = [pid]
    while let next = queue.first {
      queue.removeFirst()
      let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(next)/task")) ?? []
      for task in tasks {
        let text = (try? String(contentsOfFile: "/proc/\(next)/task/\(task)/children", encoding: .utf8)) ?? ""
        for child in text.split(separator: " ").compactMap({ Int32($0) }) where !found.contains(child) {
          found.append(child)
          queue.append(child)
        }
      }
    }
    return found
  }

  /// The fields of /proc/<pid>/status (`Seccomp`, `NoNewPrivs`, `Uid` …), nil when it is gone.
  public static func status(of pid: Int32) -> [String: String]? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    var fields: [String: String] = [:]
    for line in text.split(separator: "\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return fields
  }

  /// The descriptors open in `pid` (/proc/<pid>/fd).
  public static func descriptors(of pid: Int32) -> [Int32] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { Int32($0) }
  }
}
