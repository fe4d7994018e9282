import Foundation
import Glibc
import Synchronization

/// A real S3 server for tests: SeaweedFS's `weed mini` (master, volume server, filer and S3
/// gateway in one process) on 127.0.0.1, with its data in a temporary directory.
///
/// `shared()` starts one per test process on first use (about a second) and keeps it until the
/// process exits; suites share it and each makes its own bucket (`uniqueBucketName`). A test
/// that stops, pauses or restarts the server starts its own with `start()`.
///
/// Every instance takes its own free ports (each service also listens on port + 10 000 for gRPC).
/// The process is stopped by its pid (`stop`, or `deinit`); a watchdog shell kills it and removes
/// its directory if the test process dies first. The server's output is kept in `log` for
/// failure messages. `weed` comes from `Scripts/install-deps` (`ATTACHD_WEED` overrides it).
public final class SeaweedFS: Sendable {
  /// The S3 endpoint, `http://127.0.0.1:<port>`.
  public let endpoint: String
  /// The region to sign for (SeaweedFS accepts any; this is S3's default).
  public let region = "us-east-1"
  /// The access key id of the one identity the server knows (random per instance).
  public let accessKeyId: String
  /// Its secret access key (random per instance).
  public let secretAccessKey: String
  /// The temporary directory holding the data, the S3 identities and the log.
  public let directory: String

  private let ports: [Int]
  private let process = Mutex<Running?>(nil)

  private struct Running: Sendable {
    var pid: Int32
    var watchdog: Int32
  }

  /// The `weed` executable the tests use.
  public static let executable: String = {
    if let path = ProcessInfo.processInfo.environment["ATTACHD_WEED"], !path.isEmpty { return path }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return root.appendingPathComponent(".build/test-tools/seaweedfs/bin/weed").path
  }()

  private static let sharedInstance = Mutex<Result<SeaweedFS, SeaweedFSError>?>(nil)

  /// The instance shared by this test process, started on first use. Do not stop it.
  public static func shared() throws -> SeaweedFS {
    try sharedInstance.withLock { cached in
      if let cached { return try cached.get() }
      // A failed start is remembered: every suite would otherwise wait for its own time-out.
      let result = Result { () throws(SeaweedFSError) -> SeaweedFS in try SeaweedFS.start() }
      cached = result
      return try result.get()
    }
  }

  /// A new instance of this test's own, running and ready for S3 requests.
  public static func start() throws(SeaweedFSError) -> SeaweedFS {
    var lastError: SeaweedFSError? = nil
    // Free ports are chosen before `weed` binds them; another process may take one in between.
    for _ in 0..<3 {
      let instance = try SeaweedFS()
      do {
        try instance.launch()
        return instance
      } catch {
        lastError = error
        instance.stop()
      }
    }
    throw lastError!
  }

  private init() throws(SeaweedFSError) {
    do { directory = try ScratchSpace.directory("attachd-seaweedfs") } catch {
      throw SeaweedFSError("\(error)")
    }
    ports = try Self.freePortPairs(5)
    endpoint = "http://127.0.0.1:\(ports[3])"
    accessKeyId = "AKIA" + Self.randomString(16, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    secretAccessKey = Self.randomString(
      40, alphabet: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")
    let identities = """
      {"identities":[{"name":"attachd-tests","credentials":[{"accessKey":"\(accessKeyId)",\
      "secretKey":"\(secretAccessKey)"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
      """
    do {
      try identities.write(toFile: directory + "/s3.json", atomically: true, encoding: .utf8)
      try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
    } catch {
      throw SeaweedFSError("cannot prepare \(directory): \(error)")
    }
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// A bucket name no other suite or run uses (`label` lower-cased, plus random hex).
  public func uniqueBucketName(_ label: String) -> String {
    let cleaned = label.lowercased().filter { $0.isLetter && $0.isASCII || $0.isNumber }.prefix(40)
    return
      "\(cleaned.isEmpty ? "test" : String(cleaned))-\(Self.randomString(12, alphabet: "0123456789abcdef"))"
  }

  /// The end of the server's output, for a failure message.
  public var log: String {
    guard let data = FileManager.default.contents(atPath: directory + "/weed.log") else { return "(no log)" }
    return String(decoding: data.suffix(8_192), as: UTF8.self)
  }

  /// True while the server process runs (paused counts as running).
  public var isRunning: Bool { process.withLock { $0 != nil } }

  /// Kills the server at once (SIGKILL, as a crash would), waits for it, and keeps its data.
  public func stop() {
    guard
      let running = process.withLock({ running -> Running? in
        defer { running = nil }
        return running
      })
    else { return }
    kill(running.pid, SIGKILL)
    var status: Int32 = 0
    while waitpid(running.pid, &status, 0) == -1 && errno == EINTR {}
    kill(running.watchdog, SIGKILL)
    while waitpid(running.watchdog, &status, 0) == -1 && errno == EINTR {}
    for path in grpcSockets { unlink(path) }
  }

  /// The gRPC sockets `weed` names after its ports in /tmp (the others are in `directory`).
  private var grpcSockets: [String] {
    zip(["master", "volume", "filer", "s3", "admin"], ports).map {
      "/tmp/seaweedfs-\($0)-grpc-\($1 + 10_000).sock"
    }
  }

  /// Starts the stopped server again on the same ports and data.
  public func restart() throws(SeaweedFSError) {
    stop()
    try launch()
  }

  /// Freezes the server (SIGSTOP): connections are accepted by the kernel, nothing answers.
  public func pause() {
    signal(SIGSTOP)
    // kill() returns before every thread has stopped; on a busy machine a request sent at once
    // could still be answered. Wait until each of the process's threads reports state T.
    guard let pid = process.withLock({ $0?.pid }) else { return }
    let deadline = Date().addingTimeInterval(5)
    while Date() < deadline, !Self.allThreadsStopped(pid) { usleep(2_000) }
  }

  /// Whether every thread of `pid` is stopped (`T` in /proc/<pid>/task/<tid>/stat).
  static func allThreadsStopped(_ pid: Int32) -> Bool {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else {
      return true
    }
    for task in tasks {
      guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8) else {
        continue
      }
      // The state follows the command name's closing parenthesis.
      guard let close = stat.lastIndex(of: ")") else { continue }
      let state = stat[stat.index(after: close)...].drop(while: { $0 == " " }).first
      if state != "T" && state != "t" { return false }
    }
    return true
  }

  /// Lets a paused server run again (SIGCONT).
  public func resume() { signal(SIGCONT) }

  private func signal(_ number: Int32) {
    if let pid = process.withLock({ $0?.pid }) { kill(pid, number) }
  }

  // MARK: - Starting

  private func launch() throws(SeaweedFSError) {
    guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
      throw SeaweedFSError("no SeaweedFS at \(Self.executable): run Scripts/install-deps")
    }
    let (master, volume, filer, s3, admin) = (ports[0], ports[1], ports[2], ports[3], ports[4])
    let arguments = [
      // glog's files go beside the server's, not into the system temp dir (a flag before the command).
      "-logdir=\(directory)",
      "mini", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=\(directory)/data",
      "-s3.config=\(directory)/s3.json", "-master.port=\(master)", "-volume.port=\(volume)",
      "-filer.port=\(filer)", "-s3.port=\(s3)", "-admin.port=\(admin)", "-admin.ui=false",
      "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false",
      // No network beyond this machine: it would otherwise report usage statistics.
      "-master.telemetry=false",
      // Each bucket takes volumes of its own; left to itself `mini` sizes them (and so their
      // number) from the free disk, which on a small disk runs out after a few buckets.
      // Volumes are not preallocated: this only raises a count.
      "-master.volumeSizeLimitMB=64", "-volume.max=200",
      "-filer.localSocket=\(directory)/filer.sock", "-s3.localSocket=\(directory)/s3.sock",
    ]
    let pid = try spawn(Self.executable, arguments, output: directory + "/weed.log")
    // Kills the server and removes its files should this test process die without stopping it.
    let script = """
      while kill -0 "$1" 2>/dev/null; do sleep 1; done
      kill -9 "$2" 2>/dev/null; sleep 1; rm -rf "$3"; shift 3; rm -f "$@"
      """
    let watchdog: Int32
    do {
      watchdog = try spawn(
        "/bin/sh",
        ["-c", script, "seaweedfs-watchdog", String(getpid()), String(pid), directory] + grpcSockets,
        output: "/dev/null")
    } catch {
      kill(pid, SIGKILL)
      throw error
    }
    process.withLock { $0 = Running(pid: pid, watchdog: watchdog) }
    try waitUntilReady(master: master, s3: s3, pid: pid)
  }

  /// Waits until the S3 gateway answers and the master knows the volume server: before that,
  /// reads of stored objects fail with 500 (about 4 s after a restart, under 1 s when new).
  private func waitUntilReady(master: Int, s3: Int, pid: Int32) throws(SeaweedFSError) {
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline {
      var status: Int32 = 0
      if waitpid(pid, &status, WNOHANG) == pid {
        process.withLock { $0 = nil }
        throw SeaweedFSError("weed exited with status \(status) during start-up:\n\(log)")
      }
      if LoopbackHTTP.get(port: s3, path: "/") != nil,
        let topology = LoopbackHTTP.get(port: master, path: "/dir/status"),
        topology.body.contains("\"DataNodes\":[{")
      {
        return
      }
      usleep(50_000)
    }
    throw SeaweedFSError("SeaweedFS was not ready within 60 s:\n\(log)")
  }

  /// Starts `path` with only stdin, stdout and stderr (`ChildProcess.start`: no descriptor of
  /// the test process, such as another test's listening socket, leaks into the server).
  private func spawn(_ path: String, _ arguments: [String], output: String) throws(SeaweedFSError) -> Int32 {
    do {
      return try ChildProcess.start(path, arguments, output: output)
    } catch {
      throw SeaweedFSError("starting \(path): \(error)")
    }
  }

  /// `count` ports p, each with p + 10 000 free too, below the kernel's ephemeral range (32768+)
  /// so that outgoing connections do not take them.
  private static func freePortPairs(_ count: Int) throws(SeaweedFSError) -> [Int] {
    var chosen: [Int] = []
    for _ in 0..<2_000 where chosen.count < count {
      let port = Int.random(in: 10_000..<22_000)
      if !chosen.contains(port), isFree(port), isFree(port + 10_000) { chosen.append(port) }
    }
    guard chosen.count == count else { throw SeaweedFSError("no free port pairs found") }
    return chosen
  }

  private static func isFree(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  private static func randomString(_ count: Int, alphabet: String) -> String {
    let characters = Array(alphabet)
    return String((0..<count).map { _ in characters.randomElement()! })
  }
}

/// Why a SeaweedFS instance could not be started; holds the server's output.
public struct SeaweedFSError: Error, CustomStringConvertible {
  /// What went wrong.
  public let description: String
  init(_ description: String) { self.description = description }
}
