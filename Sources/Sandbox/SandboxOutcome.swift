import Glibc

/// How a sandboxed job ended, from the server's side: the one result type the App maps to a
/// status (`ErrorTable`).
public enum SandboxOutcome: Sendable, Equatable {
  /// The child ran to the end and left its output.
  case finished
  /// The child died of a fault signal (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP), or
  /// exited with a failure: the input broke the decoder.
  case crashed(signal: Int32?)
  /// The child made a system call its filter forbids (SIGSYS): the input tried something.
  case violation
  /// The child could not allocate within its memory limit.
  case memoryLimit
  /// The child used up its CPU seconds.
  case cpuLimit
  /// Something outside killed the child (SIGKILL from the OOM killer or an operator).
  case killed
  /// The helper stopped the child because its deadline passed or its client left.
  case stopped

  /// The stable name of the outcome (metrics labels, logs).
  public var name: String {
    switch self {
    case .finished: "ok"
    case .crashed: "crashed"
    case .violation: "violation"
    case .memoryLimit: "memory_limit"
    case .cpuLimit: "cpu_limit"
    case .killed: "killed"
    case .stopped: "stopped"
    }
  }

  /// The outcome of `exit`, for a child whose memory limit was `memoryLimit` bytes.
  init(_ exit: SandboxExit, memoryLimit: Int) {
    if exit.killedByHelper {
      self = .stopped
      return
    }
    if let signal = exit.signal {
      switch signal {
      case SIGSYS: self = .violation
      case SIGXCPU: self = .cpuLimit
      case SIGKILL: self = .killed
      default:
        // The runtime's last words, or a peak next to the limit, say an allocation failed.
        self = Self.ranOutOfMemory(exit, memoryLimit: memoryLimit) ? .memoryLimit : .crashed(signal: signal)
      }
      return
    }
    if exit.code == 0 {
      self = .finished
    } else {
      self = Self.ranOutOfMemory(exit, memoryLimit: memoryLimit) ? .memoryLimit : .crashed(signal: nil)
    }
  }

  /// Whether a failed child ran out of memory: the Swift runtime's "Could not allocate memory"
  /// (or glibc's "out of memory") in its diagnostics, or a resident peak within 1/16 of the limit.
  static func ranOutOfMemory(_ exit: SandboxExit, memoryLimit: Int) -> Bool {
    let text = String(decoding: exit.diagnostics, as: UTF8.self).lowercased()
    if text.contains("could not allocate memory") || text.contains("out of memory") { return true }
    let peak = Int(clamping: exit.maxResidentKiB) * 1024
    return memoryLimit > 0 && peak >= memoryLimit - memoryLimit / 16
  }
}
