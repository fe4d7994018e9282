import Foundation
import Glibc

/// An HAProxy of the test's own (Debian's `haproxy`, installed by `Scripts/install-deps`) in
/// front of one or more backends on 127.0.0.1: its configuration is written per test into a
/// temp dir, it listens on a free loopback port, runs in the foreground as a child of the test
/// process, and is stopped by its pid (also by a watcher when the test process dies).
///
/// HTTP mode with keep-alive on both sides and streamed bodies (no request buffering): what a
/// load balancer in front of attachd does. Interim responses (`100`, `104`) are relayed.
public final class HAProxy: @unchecked Sendable {
  // Immutable after `init`; `stop` is idempotent through `ChildProcess.stop`.

  /// How requests are spread over the backends.
  public enum Balance: String, Sendable {
    /// In turn: a resumed upload may land on another node than its creation.
    case roundRobin = "roundrobin"
    /// All to the first backend that is up.
    case first
  }

  /// The port clients connect to.
  public let port: Int
  /// The temp directory: `haproxy.cfg`, `haproxy.log`.
  public let directory: String
  /// The HAProxy process.
  public let pid: pid_t

  /// The `haproxy` executable, when installed.
  public static let executable: String? = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  /// Starts HAProxy in front of `backends` (127.0.0.1 ports) and returns once it accepts
  /// connections. `timeout`: client and server inactivity, seconds.
  public convenience init(backends: [Int], balance: Balance = .roundRobin, timeout: Int = 60) throws {
    try self.init(backends: backends) { port in
      Self.configuration(port: port, backends: backends, balance: balance, timeout: timeout)
    }
  }

  /// Starts HAProxy with the repository's own `Config/haproxy.cfg` (what operators run), its
  /// listener and servers moved to 127.0.0.1: `backends` in the order of its `server` lines.
  public convenience init(shippedConfigurationFor backends: [Int]) throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let shipped = try String(contentsOf: root.appendingPathComponent("Config/haproxy.cfg"), encoding: .utf8)
    try self.init(backends: backends) { port in
      var servers = backends.makeIterator()
      return shipped.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
        let words = line.split(separator: " ")
        if words.first == "global" { return "global\n  noreuseport" }
        if words.first == "bind" { return "  bind 127.0.0.1:\(port)" }
        if words.first == "server", words.count >= 3, let backend = servers.next() {
          return
            (["  server", String(words[1]), "127.0.0.1:\(backend)"] + words.dropFirst(3).map(String.init))
            .joined(separator: " ")
        }
        return String(line)
      }.joined(separator: "\n")
    }
  }

  private init(backends: [Int], configuration: (Int) -> String) throws {
    guard let executable = Self.executable else {
      throw ChildProcess.Failure(description: "haproxy is not installed (Scripts/install-deps installs it)")
    }
    precondition(!backends.isEmpty, "HAProxy needs a backend")
    directory = try ScratchSpace.directory("attachd-haproxy")
    var started: (port: Int, pid: pid_t)?
    var lastError: (any Error)?
    // A free port can be taken by someone else before HAProxy binds it: try a few.
    for _ in 0..<5 {
      let candidate = try ChildProcess.freePort()
      let config = configuration(candidate)
      try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/haproxy.cfg"))
      _ = try ChildProcess.run(executable, ["-c", "-q", "-f", directory + "/haproxy.cfg"], timeout: 30)
      let pid = try ChildProcess.start(
        executable, ["-db", "-f", directory + "/haproxy.cfg"], output: directory + "/haproxy.log")
      if Self.waitUntilListening(port: candidate, pid: pid) {
        started = (candidate, pid)
        break
      }
      ChildProcess.stop(pid)
      lastError = ChildProcess.Failure(
        description: "haproxy did not listen on \(candidate): \(Self.read(directory))")
    }
    guard let started else { throw lastError ?? ChildProcess.Failure(description: "haproxy did not start") }
    port = started.port
    pid = started.pid
    try ChildProcess.spawnDetached(
      """
      while kill -0 \(getpid()) 2>/dev/null; do sleep 0.5; done
      kill -TERM \(pid) 2>/dev/null; sleep 1; kill -KILL \(pid) 2>/dev/null
      rm -rf '\(directory)'
      """)
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// Stops HAProxy (connections through it are cut).
  public func stop() { ChildProcess.stop(pid) }

  /// What HAProxy printed (alerts, warnings).
  public var log: String { Self.read(directory) }

  /// The configuration: one frontend, one backend of `backends`.
  static func configuration(port: Int, backends: [Int], balance: Balance, timeout: Int) -> String {
    var lines = [
      "global",
      // HAProxy binds with SO_REUSEPORT by default, so two of the tests' HAProxys given the same
      // free port would share it and take each other's clients (seen: a cluster's upload
      // answered by another test's HAProxy with no server up). Without it the second one's bind
      // fails, and `init` tries another port.
      "  noreuseport",
      "  maxconn 4096",
      "defaults",
      "  mode http",
      "  timeout connect 5s",
      "  timeout client \(timeout)s",
      "  timeout server \(timeout)s",
      "  timeout http-request 10s",
      "frontend uploads",
      "  bind 127.0.0.1:\(port)",
      "  option forwardfor",
      "  default_backend attachd",
      "backend attachd",
      "  balance \(balance.rawValue)",
    ]
    for (index, backend) in backends.enumerated() {
      lines.append("  server node\(index) 127.0.0.1:\(backend)")
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private static func waitUntilListening(port: Int, pid: pid_t) -> Bool {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      guard ChildProcess.isAlive(pid) else { return false }
      if canConnect(port: port) { return true }
      usleep(20_000)
    }
    return false
  }

  private static func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func read(_ directory: String) -> String {
    (try? String(contentsOfFile: directory + "/haproxy.log", encoding: .utf8)) ?? ""
  }
}
