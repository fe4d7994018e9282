import Glibc

/// Why the sandbox could not do what was asked. A decode's own outcome (crashed, over a limit,
/// a violation) is not an error of this kind but a `SandboxOutcome`.
public enum SandboxError: Error, Sendable, Equatable, CustomStringConvertible {
  /// A system call failed: its name and errno.
  case system(String, Int32)
  /// No helper is running (it is starting, or died and is being restarted).
  case unavailable(String)
  /// A mandatory layer could not be put in place; no decode may run without it.
  case lockdownFailed(String)
  /// The helper sent something that is not a reply.
  case protocolViolation(String)

  public var description: String {
    switch self {
    case .system(let call, let code): "\(call): \(String(cString: strerror(code))) (errno \(code))"
    case .unavailable(let reason): "sandbox unavailable: \(reason)"
    case .lockdownFailed(let reason): "sandbox lockdown failed: \(reason)"
    case .protocolViolation(let reason): "sandbox protocol: \(reason)"
    }
  }
}
