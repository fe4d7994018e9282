import Foundation
import Glibc

/// Runs helper programs (initdb, pg_ctl, psql) to completion under a deadline.
public enum ChildProcess {
  /// What a finished program printed and how it ended.
  public struct Outcome: Sendable {
    public var status: Int32
    public var output: String
  }

  /// A failure to run a program, with what it printed.
  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Runs `executable` with `arguments`, feeding `input`, and waits at most `timeout` seconds.
  ///
  /// Standard output and error go to a temporary file, not a pipe: a daemon the program starts
  /// (pg_ctl's postmaster) must not hold a pipe of ours open after the program exits. Spawned
  /// and reaped here with posix_spawn and waitpid: Foundation's `Process` did not notice
  /// runuser's exit after `pg_ctl start` (its child daemon lives on), and waited for ever.
  @discardableResult
  public static func run(
    _ executable: String, _ arguments: [String], input: String? = nil, timeout: TimeInterval = 60,
    checked: Bool = true
  ) throws -> Outcome {
    let outputPath = try temporaryFile(contents: "")
    defer { unlink(outputPath) }
    let inputPath = try temporaryFile(contents: input ?? "")
    defer { unlink(inputPath) }
    let pid = try spawn(executable, arguments, input: inputPath, output: outputPath)
    let deadline = Date().addingTimeInterval(timeout)
    var status: Int32 = 0
    while true {
      let reaped = waitpid(pid, &status, WNOHANG)
      if reaped == pid { break }
      if reaped < 0 && errno != EINTR { throw Failure(description: "waitpid failed, errno \(errno)") }
      if Date() >= deadline {
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) ran over \(timeout) s")
      }
      usleep(2_000)
    }
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    // WIFEXITED / WEXITSTATUS are macros: exit code in bits 8…15 when the low 7 bits are 0.
    let exitCode = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    let outcome = Outcome(status: exitCode, output: output)
    if checked && outcome.status != 0 {
      throw Failure(
        description:
          "\(URL(fileURLWithPath: executable).lastPathComponent) exited \(outcome.status): \(output)")
    }
    return outcome
  }

  /// Starts `/bin/sh -c script` with its standard streams on /dev/null and does not wait for it.
  public static func spawnDetached(_ script: String) throws {
    _ = try spawn("/bin/sh", ["-c", script], input: "/dev/null", output: "/dev/null")
  }

  /// Starts `executable` (a server) with its output appended to the file at `output`, and does
  /// not wait for it: stop it with `stop(_:)`, by its pid.
  public static func start(_ executable: String, _ arguments: [String], output: String) throws -> pid_t {
    if !FileManager.default.fileExists(atPath: output) {
      _ = FileManager.default.createFile(atPath: output, contents: nil)
    }
    return try spawn(executable, arguments, input: "/dev/null", output: output)
  }

  /// Stops a child started with `start`: SIGTERM, then SIGKILL after `grace` seconds; reaps it.
  public static func stop(_ pid: pid_t, grace: TimeInterval = 5) {
    var status: Int32 = 0
    guard waitpid(pid, &status, WNOHANG) == 0 else { return }
    kill(pid, SIGTERM)
    let deadline = Date().addingTimeInterval(grace)
    while Date() < deadline {
      if waitpid(pid, &status, WNOHANG) != 0 { return }
      usleep(5_000)
    }
    kill(pid, SIGKILL)
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  }

  /// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick for port 0).
  public static func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw Failure(description: "socket failed, errno \(errno)") }
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
      }
    }
    guard bound else { throw Failure(description: "bind 127.0.0.1:0 failed, errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  private static func spawn(_ executable: String, _ arguments: [String], input: String, output: String) throws
    -> pid_t
  {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_APPEND, 0)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    // Nothing else of the test process: descriptors made without close-on-exec (Foundation's
    // `Pipe`) would otherwise stay open in a server or watcher living as long as the test
    // process, and a reader of such a pipe (curl's output in `LiveTesting.run`) would wait for an
    // end of file that never comes.
    closeInheritedDescriptors(&actions)
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard result == 0 else { throw Failure(description: "posix_spawn \(executable) failed, error \(result)") }
    return pid
  }

  /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which the Glibc module does not
  /// declare (it is a GNU extension).
  private typealias CloseFrom =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
  private static let closeFrom: CloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
    unsafeBitCast($0, to: CloseFrom.self)
  }

  /// Adds closing every descriptor above 2 to `actions`: at once where glibc can, else each one
  /// open now (a descriptor another thread opens meanwhile may still leak).
  private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    if let closeFrom, closeFrom(&actions, 3) == 0 { return }
    let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    // glibc ignores a close action on a descriptor that is no longer open.
    for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
      posix_spawn_file_actions_addclose(&actions, descriptor)
    }
  }

  private static func temporaryFile(contents: String) throws -> String {
    var template = Array((ScratchSpace.root + "/attachd-child-XXXXXX").utf8CString)
    let descriptor = mkstemp(&template)
    guard descriptor >= 0 else { throw Failure(description: "mkstemp failed, errno \(errno)") }
    close(descriptor)
    let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  /// True while `pid` names a process that has not exited (a zombie counts as exited).
  public static func isAlive(_ pid: pid_t) -> Bool {
    guard kill(pid, 0) == 0 || errno == EPERM else { return false }
    // /proc/PID/stat: "pid (comm) S …"; the state follows the last ')'.
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
    return state != "Z" && state != "X"
  }

  /// The ids of the processes whose parent is `pid` (a postmaster's backends).
  public static func children(of pid: pid_t) -> [pid_t] {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
    return entries.compactMap { entry -> pid_t? in
      guard let child = pid_t(entry),
        let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
      else { return nil }
      let fields = stat[stat.index(after: close)...].split(separator: " ")
      return fields.count > 1 && pid_t(fields[1]) == pid ? child : nil
    }
  }
}
