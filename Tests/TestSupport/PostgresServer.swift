import Foundation
import Glibc
import Synchronization

/// A PostgreSQL server of the tests' own: a data directory in a temp dir, `pg_ctl start` on a
/// free 127.0.0.1 port and a Unix socket in the same temp dir, stopped by its pid.
///
/// `shared()` is one server per test process (suites take a fresh database from it); a test
/// that stops, freezes or restarts its server makes one of its own with `init()`. Running as
/// root, the server runs as the `postgres` OS user (`runuser`), which owns its directory.
/// fsync is off unless asked for: nothing here survives the process.
///
/// Start-up is kept fast by copying a pristine `initdb` output (made once per machine and
/// PostgreSQL version) instead of running initdb each time, in /dev/shm when it has room. A watcher
/// process stops the server and removes its directory when the test process ends, even by a
/// crash.
///
/// `@unchecked Sendable`: the only mutable state, `port`, is set during `init`.
public final class PostgresServer: @unchecked Sendable {
  /// The login role (a superuser) and its password for TCP connections (scram-sha-256).
  public let user = "attachd"
  /// Random per server; tests check that it never shows in a message or a log.
  public let password: String
  /// The loopback port; the same across `stop()` and `start()`.
  public private(set) var port: Int
  /// The temp directory: `data/`, `server.log`, and the Unix socket.
  public let directory: String
  /// Server binaries (`initdb`, `pg_ctl`, `postgres`, `psql`).
  public let binaries: String
  private let runAsPostgres: Bool
  private let fsync: Bool
  private let databases = Mutex<Set<String>>([])
  private let serial = Atomic<Int>(0)

  /// A new server, started. `fsync: true` for measurements that should pay for durability.
  public init(fsync: Bool = false) throws {
    binaries = try Self.findBinaries()
    runAsPostgres = getuid() == 0
    self.fsync = fsync
    password = "pw-" + UUID().uuidString.lowercased()
    let base = Self.baseDirectory(durable: fsync)
    directory = try ScratchSpace.directory("attachd-postgres", under: base)
    port = 0
    let pristine = try Self.pristineDataDirectory(binaries: binaries, asPostgres: runAsPostgres, base: base)
    try ChildProcess.run("/bin/cp", ["-a", pristine, directory + "/data"])
    if runAsPostgres, let account = getpwnam("postgres") {
      chown(directory, account.pointee.pw_uid, account.pointee.pw_gid)
    }
    chmod(directory, 0o755)
    try watchOverProcess()
    var lastError: (any Error)?
    // A free port can be taken by someone else before the server binds it: try a few.
    for _ in 0..<5 {
      port = try Self.freePort()
      do {
        try start()
        lastError = nil
        break
      } catch {
        lastError = error
      }
    }
    if let lastError { throw lastError }
    try psql(
      "ALTER ROLE \(user) PASSWORD :'password';", database: "postgres", variables: ["password": password])
  }

  deinit {
    stop()
    try? FileManager.default.removeItem(atPath: directory)
  }

  private static let sharedServer = Mutex<PostgresServer?>(nil)

  /// The test process's server, started on first use.
  public static func shared() throws -> PostgresServer {
    try sharedServer.withLock { server in
      if let server { return server }
      let started = try PostgresServer()
      server = started
      return started
    }
  }

  // MARK: - Lifecycle

  /// The postmaster's pid while the server runs.
  public var pid: pid_t? {
    guard let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
      let first = text.split(separator: "\n").first, let pid = pid_t(first), ChildProcess.isAlive(pid)
    else { return nil }
    return pid
  }

  /// Starts the server (again) on its port; returns once it accepts connections.
  public func start() throws {
    let options = [
      "-p \(port)", "-c listen_addresses=127.0.0.1", "-c unix_socket_directories=\(directory)",
      "-c fsync=\(fsync ? "on" : "off")", "-c synchronous_commit=\(fsync ? "on" : "off")",
      "-c full_page_writes=\(fsync ? "on" : "off")", "-c max_connections=300", "-c shared_buffers=32MB",
      // Parallel workers use /dev/shm, which containers keep small.
      "-c max_parallel_workers_per_gather=0", "-c max_worker_processes=4",
    ]
    try run(
      "pg_ctl",
      [
        "start", "-w", "-t", "60", "-D", directory + "/data", "-l", directory + "/server.log", "-o",
        options.joined(separator: " "),
      ],
      timeout: 90)
  }

  /// Stops the server (fast shutdown: sessions are ended) and waits until its pid is gone.
  public func stop() {
    guard let pid else { return }
    kill(pid, SIGINT)
    let deadline = Date().addingTimeInterval(30)
    while ChildProcess.isAlive(pid) && Date() < deadline { usleep(10_000) }
    if ChildProcess.isAlive(pid) {
      kill(pid, SIGKILL)
      while ChildProcess.isAlive(pid) { usleep(10_000) }
    }
  }

  /// Freezes the server and every backend (SIGSTOP): connections stay open, nothing answers.
  public func pause() {
    guard let pid else { return }
    for child in ChildProcess.children(of: pid) { kill(child, SIGSTOP) }
    kill(pid, SIGSTOP)
  }

  /// Lets a paused server run again.
  public func resume() {
    guard let pid else { return }
    kill(pid, SIGCONT)
    for child in ChildProcess.children(of: pid) { kill(child, SIGCONT) }
  }

  // MARK: - Databases

  /// A libpq URI for `database` over TCP with the password; `schema` sets the search path.
  public func url(database: String, schema: String? = nil) -> String {
    var url = "postgresql://\(user):\(password)@127.0.0.1:\(port)/\(database)"
    if let schema { url += "?options=-csearch_path%3D\(schema)" }
    return url
  }

  /// Creates a new, empty database and returns its name (`prefix` plus a number).
  public func createDatabase(prefix: String = "attachd_test") throws -> String {
    let name = "\(prefix)_\(serial.add(1, ordering: .relaxed).newValue)_\(getpid())"
    try psql("CREATE DATABASE \(name);", database: "postgres")
    databases.withLock { _ = $0.insert(name) }
    return name
  }

  /// The database named `name`, created on first use (one per suite: `database(named: "conformance")`).
  public func database(named name: String) throws -> String {
    let database = "suite_\(name)"
    let exists = databases.withLock { $0.contains(database) }
    if !exists {
      let found = try psql(
        "SELECT 1 FROM pg_database WHERE datname = :'name';", database: "postgres",
        variables: ["name": database])
      if found.trimmingCharacters(in: .whitespacesAndNewlines) != "1" {
        _ = try? psql("CREATE DATABASE \(database);", database: "postgres")
      }
      databases.withLock { _ = $0.insert(database) }
    }
    return database
  }

  /// A new, empty schema in `database`, for a test that needs tables of its own; returns its name.
  public func createSchema(in database: String) throws -> String {
    let name = "t\(serial.add(1, ordering: .relaxed).newValue)"
    try psql("CREATE SCHEMA \(name);", database: database)
    return name
  }

  /// Runs SQL through psql over the Unix socket (trust authentication); returns unaligned rows.
  /// `variables` are psql variables, quoted where the SQL says `:'name'`.
  @discardableResult
  public func psql(_ sql: String, database: String, variables: [String: String] = [:]) throws -> String {
    var arguments = [
      "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", directory, "-p", String(port), "-U", user, "-d",
      database,
    ]
    for (name, value) in variables.sorted(by: { $0.key < $1.key }) {
      arguments += ["-v", "\(name)=\(value)"]
    }
    return try ChildProcess.run(binaries + "/psql", arguments, input: sql, timeout: 60).output
  }

  /// Starts psql on `sql` in the background and returns at once (a session that holds a lock
  /// while a test runs); it ends with its SQL, or with the server.
  public func psqlInBackground(_ sql: String, database: String) throws {
    let quoted = sql.replacingOccurrences(of: "'", with: "'\\''")
    try ChildProcess.spawnDetached(
      "'\(binaries)/psql' -X -q -h '\(directory)' -p \(port) -U \(user) -d \(database) -c '\(quoted)'")
  }

  /// The server's log so far (to check that no password reached it, or to explain a failure).
  public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

  // MARK: - Internals

  private func run(_ program: String, _ arguments: [String], timeout: TimeInterval) throws {
    if runAsPostgres {
      try ChildProcess.run(
        "/usr/sbin/runuser", ["-u", "postgres", "--", binaries + "/" + program] + arguments, timeout: timeout)
    } else {
      try ChildProcess.run(binaries + "/" + program, arguments, timeout: timeout)
    }
  }

  /// Stops the server and removes its directory once this test process has gone, however it went.
  private func watchOverProcess() throws {
    let data = directory + "/data"
    try ChildProcess.spawnDetached(
      """
      while kill -0 \(getpid()) 2>/dev/null; do sleep 0.5; done
      pid=$(head -n 1 '\(data)/postmaster.pid' 2>/dev/null)
      if [ -n "$pid" ]; then
        kill -INT "$pid" 2>/dev/null
        n=0; while [ -e '\(data)/postmaster.pid' ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
        kill -KILL "$pid" 2>/dev/null
      fi
      rm -rf '\(directory)'
      """)
  }

  private static func findBinaries() throws -> String {
    if let override = ProcessInfo.processInfo.environment["ATTACHD_POSTGRES_BIN"], !override.isEmpty {
      return override
    }
    for version in [15, 16, 17]
    where FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(version)/bin/initdb") {
      return "/usr/lib/postgresql/\(version)/bin"
    }
    throw ChildProcess.Failure(
      description: "no PostgreSQL server binaries (Scripts/install-deps installs postgresql-15)")
  }

  /// Where data directories go: /dev/shm (memory) when it has room and durability is not being
  /// measured, else the temp dir. On a loaded machine, copying the 50 MB data directory and
  /// CREATE DATABASE took seconds on disk; in memory, milliseconds.
  private static func baseDirectory(durable: Bool) -> String {
    var stats = statvfs()
    if !durable, access("/dev/shm", W_OK) == 0, statvfs("/dev/shm", &stats) == 0,
      UInt64(stats.f_bavail) * UInt64(stats.f_frsize) >= 1 << 30
    {
      return "/dev/shm"
    }
    return NSTemporaryDirectory()
  }

  private static func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw ChildProcess.Failure(description: "socket failed, errno \(errno)") }
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
    guard bound else { throw ChildProcess.Failure(description: "bind 127.0.0.1:0 failed, errno \(errno)") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// A data directory as initdb leaves it, made once per machine, version and user, then copied.
  private static func pristineDataDirectory(binaries: String, asPostgres: Bool, base: String) throws -> String
  {
    // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" → "15.18"
    let words = try ChildProcess.run(binaries + "/postgres", ["--version"]).output.split(separator: " ")
    let version = words.count > 2 ? String(words[2]) : "unknown"
    let cache = base + "/attachd-postgres-template-\(version)-uid\(getuid())"
    if FileManager.default.fileExists(atPath: cache + "/PG_VERSION") { return cache }
    // Built beside the cache and renamed into place: a concurrent test process sees all or nothing.
    let work = try ScratchSpace.directory("attachd-postgres-initdb", under: base)
    defer { try? FileManager.default.removeItem(atPath: work) }
    // Password authentication needs a superuser password at initdb; each server replaces it.
    let passwordFile = work + "/password"
    try Data(UUID().uuidString.utf8).write(to: URL(fileURLWithPath: passwordFile))
    let arguments = [
      "-D", work + "/data", "--no-sync", "-U", "attachd", "-E", "UTF8", "--locale=C",
      "--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + passwordFile, "--no-instructions",
    ]
    if asPostgres, let account = getpwnam("postgres") {
      chown(work, account.pointee.pw_uid, account.pointee.pw_gid)
      chown(passwordFile, account.pointee.pw_uid, account.pointee.pw_gid)
      try ChildProcess.run(
        "/usr/sbin/runuser", ["-u", "postgres", "--", binaries + "/initdb"] + arguments, timeout: 120)
    } else {
      try ChildProcess.run(binaries + "/initdb", arguments, timeout: 120)
    }
    if rename(work + "/data", cache) != 0 && !FileManager.default.fileExists(atPath: cache + "/PG_VERSION") {
      throw ChildProcess.Failure(description: "could not move the initdb template into place, errno \(errno)")
    }
    return cache
  }
}
