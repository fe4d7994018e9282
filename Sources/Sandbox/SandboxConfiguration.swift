/// How the sandbox runs: which executable is the helper, and each child's limits.
public struct SandboxConfiguration: Sendable, Equatable {
  /// The helper executable, started with `helperArguments` (e.g. `["sandbox-helper"]`), an
  /// environment of nothing but `LD_BIND_NOW=1` and only its socket: by default this program itself.
  public var executable: String = SandboxConfiguration.thisProgram
  /// Arguments before the helper's own settings.
  public var helperArguments: [String] = ["sandbox-helper"]
  /// Address space of one child, bytes (3 GiB: a 200 MP HEIC decodes in well under that).
  public var memoryLimit = 3 << 30
  /// CPU seconds of one child before the kernel stops it (SIGXCPU, then SIGKILL a second later).
  public var cpuSeconds = 60
  /// The uid and gid a helper started as root runs as (65534, `nobody`).
  public var unprivilegedID: UInt32 = 65534
  /// Children of one helper before it is replaced by a fresh one (0: never).
  public var recycleAfter = 10_000
  /// Seconds a request (or `sandbox check`) waits for a helper to be in service.
  public var startTimeout = 10.0
  /// Seconds a starting helper is given before it is killed and another started. Longer than
  /// `startTimeout` on purpose: a helper loads every codec library before it locks down, and on
  /// a loaded host with a cold disk (a container's first start) that has taken over 10 s — a
  /// helper killed then and started from scratch would never finish (seen in Scripts/staging:
  /// a node 503 for its whole life). Requests meanwhile get 503 after `startTimeout`.
  public var startLimit = 120.0

  public init() {}

  /// This program (`/proc/self/exe`) — except inside `swift test`, whose process is the test
  /// bundle and cannot be a helper: there, the `attachd` built beside it.
  public static var thisProgram: String {
    let running = CommandLine.arguments.first ?? ""
    guard running.hasSuffix(".xctest") else { return "/proc/self/exe" }
    let directory = running.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(
      separator: "/")
    return (directory.isEmpty ? "." : directory) + "/attachd"
  }

  /// The settings the helper reads from its command line.
  var helperSettings: [String] {
    ["--memory", String(memoryLimit), "--cpu", String(cpuSeconds), "--uid", String(unprivilegedID)]
  }
}

/// The settings a helper was started with (parsed from its command line).
struct HelperSettings: Equatable {
  var memoryLimit = 3 << 30
  var cpuSeconds = 60
  var unprivilegedID: UInt32 = 65534

  /// Reads `--memory N --cpu N --uid N`; nil for anything else.
  init?(_ arguments: [String]) {
    var rest = arguments[...]
    while let flag = rest.popFirst() {
      guard let value = rest.popFirst() else { return nil }
      switch flag {
      case "--memory":
        guard let n = Int(value), n > 0 else { return nil }
        memoryLimit = n
      case "--cpu":
        guard let n = Int(value), n > 0 else { return nil }
        cpuSeconds = n
      case "--uid":
        guard let n = UInt32(value) else { return nil }
        unprivilegedID = n
      default: return nil
      }
    }
  }

  init() {}
}
