import Foundation
import Glibc

/// `attachd sandbox check`: which layers the sandbox has on this kernel, each proved by a child
/// that tries the forbidden thing and is stopped.
public struct SandboxCheck: Sendable {
  /// One line of the report.
  public struct Item: Sendable, Equatable {
    /// What was checked (`seccomp: open a file`).
    public var name: String
    /// Whether the check held.
    public var passed: Bool
    /// Whether the sandbox may not run without it.
    public var mandatory: Bool
    /// What was seen.
    public var detail: String
  }

  public var items: [Item] = []
  /// The layers the helper reported, when it started.
  public var layers: SandboxLayers?

  /// Whether every mandatory check held.
  public var passed: Bool { layers != nil && items.allSatisfy { $0.passed || !$0.mandatory } }

  /// Runs every check with a sandbox of `configuration` (its limits lowered so the limit probes
  /// end quickly: 1 GiB of address space, 1 CPU second).
  public static func run(configuration: SandboxConfiguration) -> SandboxCheck {
    var configuration = configuration
    configuration.memoryLimit = 1 << 30
    configuration.cpuSeconds = 1
    let sandbox = Sandbox(configuration: configuration)
    defer { sandbox.stop() }
    var check = SandboxCheck()
    guard sandbox.waitUntilReady(seconds: configuration.startTimeout), let layers = sandbox.layers else {
      check.items.append(
        Item(name: "helper", passed: false, mandatory: true, detail: sandbox.lastFailure ?? "did not start"))
      return check
    }
    check.layers = layers
    check.items.append(
      Item(
        name: "uid", passed: layers.uid != 0, mandatory: true,
        detail: "helper and children run as uid \(layers.uid)" + (layers.droppedRoot ? " (root dropped)" : "")
      ))
    check.items += layerItems(layers)
    check.items.append(check.childStatus(sandbox))
    // A listener, so that only the sandbox can stop the connect.
    let listener = Listener()
    for (name, job, parameters) in [
      ("seccomp: open a file", "probe.open", "/etc/passwd"),
      ("seccomp: connect to 127.0.0.1", "probe.connect", String(listener?.port ?? 9)),
      ("seccomp: execve", "probe.exec", ""),
      ("seccomp: read the server's /proc/\(getpid())/environ", "probe.environ", String(getpid())),
    ] {
      check.items.append(
        probe(sandbox, name: name, job: job, parameters: parameters) { run in
          (run.outcome == .violation, "the child was killed (\(run.outcome.name))")
        })
    }
    check.items.append(
      probe(sandbox, name: "rlimit: allocate past 1 GiB", job: "probe.allocate", parameters: "") { run in
        let text = String(decoding: run.output, as: UTF8.self)
        let megabytes = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? Int.max
        return (
          run.outcome == .finished && megabytes > 0 && megabytes < 1024,
          "stopped: \(text.isEmpty ? run.outcome.name : text)"
        )
      })
    check.items.append(
      probe(sandbox, name: "rlimit: spin past 1 CPU second", job: "probe.spin", parameters: "") { run in
        (
          run.outcome == .cpuLimit,
          "stopped after \(run.exit.cpuMicroseconds / 1000) ms of CPU (\(run.outcome.name))"
        )
      })
    return check
  }

  private static func layerItems(_ layers: SandboxLayers) -> [Item] {
    func optional(_ name: String, _ on: Bool, _ key: String) -> Item {
      let note = layers.notes.first { $0.hasPrefix(key) }
      return Item(name: name, passed: on, mandatory: false, detail: on ? "in force" : note ?? "not available")
    }
    return [
      optional("namespace: user", layers.userNamespace, "user"),
      optional("namespace: network", layers.networkNamespace, "network"),
      optional("namespace: ipc", layers.ipcNamespace, "ipc"),
      optional("namespace: mount", layers.mountNamespace, "mount"),
      optional("namespace: pid", layers.pidNamespace, "pid"),
      Item(
        name: "landlock", passed: layers.landlockABI > 0, mandatory: false,
        detail: layers.landlockABI > 0
          ? "ABI \(layers.landlockABI), no filesystem access"
          : layers.notes.first { $0.hasPrefix("landlock") } ?? "not available"),
    ]
  }

  /// A decoding child seen from outside while it runs: seccomp mode 2, no new privileges, not
  /// root, and only the descriptors it was handed.
  private func childStatus(_ sandbox: Sandbox) -> Item {
    let name = "child: /proc status and descriptors"
    guard let helper = sandbox.helperPID else {
      return Item(name: name, passed: false, mandatory: true, detail: "no helper")
    }
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      _ = try? [UInt8]().withUnsafeBytes {
        try sandbox.run(
          job: "probe.sleep", input: $0, parameters: Array("1500".utf8), outputCapacity: 64,
          deadline: .seconds(10))
      }
      done.signal()
    }
    defer { done.wait() }
    let deadline = Date().addingTimeInterval(2)
    while Date() < deadline {
      if let child = SandboxProcesses.descendants(of: helper).last,
        let status = SandboxProcesses.status(of: child), status["Seccomp"] == "2"
      {
        let descriptors = SandboxProcesses.descriptors(of: child)
        let uid = status["Uid"]?.split(separator: "\t").first.map(String.init) ?? "?"
        let passed =
          status["NoNewPrivs"] == "1" && uid != "0" && descriptors.sorted() == [2, 3, 4]
        return Item(
          name: name, passed: passed, mandatory: true,
          detail:
            "Seccomp \(status["Seccomp"] ?? "?"), NoNewPrivs \(status["NoNewPrivs"] ?? "?"), uid \(uid), "
            + "descriptors \(descriptors.sorted())")
      }
      usleep(10_000)
    }
    return Item(name: name, passed: false, mandatory: true, detail: "no locked-down child seen")
  }

  private static func probe(
    _ sandbox: Sandbox, name: String, job: String, parameters: String,
    judge: (SandboxRun) -> (Bool, String)
  ) -> Item {
    do {
      let run = try [UInt8]().withUnsafeBytes {
        try sandbox.run(
          job: job, input: $0, parameters: Array(parameters.utf8), outputCapacity: 4096,
          deadline: .seconds(20))
      }
      let (passed, detail) = judge(run)
      return Item(name: name, passed: passed, mandatory: true, detail: detail)
    } catch {
      return Item(name: name, passed: false, mandatory: true, detail: "\(error)")
    }
  }

  /// The report for people: one line per check.
  public var text: String {
    var lines = items.map {
      "\($0.passed ? "ok  " : ($0.mandatory ? "FAIL" : "off ")) \($0.name): \($0.detail)"
    }
    lines.append(passed ? "sandbox: every mandatory layer holds" : "sandbox: a mandatory layer is missing")
    return lines.joined(separator: "\n")
  }

  /// The report as JSON: `{"passed":…,"checks":[{"name","passed","mandatory","detail"}…]}`.
  public var json: String {
    func quoted(_ text: String) -> String {
      var out = "\""
      for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
      }
      return out + "\""
    }
    let checks = items.map {
      "{\"name\":\(quoted($0.name)),\"passed\":\($0.passed),\"mandatory\":\($0.mandatory),\"detail\":\(quoted($0.detail))}"
    }
    return "{\"passed\":\(passed),\"checks\":[\(checks.joined(separator: ","))]}"
  }
}

/// A loopback TCP listener on a free port, closed with the value.
private final class Listener {
  let fd: Int32
  let port: Int

  init?() {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard fd >= 0, bound else {
      if fd >= 0 { close(fd) }
      return nil
    }
    self.fd = fd
    port = Int(UInt16(bigEndian: address.sin_port))
  }

  deinit { close(fd) }
}
