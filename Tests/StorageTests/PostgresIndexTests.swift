import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// What only PostgresIndex has: its configuration, schema, statements and pool, on the shared
/// test server. Faults (a stopped or frozen server) are in `PostgresFaultTests`.
@Suite struct PostgresIndexTests {
  @Test func configurationValidationRejectsWhatCannotWork() throws {
    let good = "postgresql://attachd:secret@127.0.0.1:5432/attachd"
    try PostgresIndex.Configuration(url: good).validate()
    try PostgresIndex.Configuration(url: "postgres://localhost/attachd").validate()
    let bad: [PostgresIndex.Configuration] = [
      .init(url: ""), .init(url: "mysql://localhost/x"), .init(url: "host=localhost dbname=x"),
      .init(url: "postgresql://localhost/x?nosuchsetting=1"), .init(url: good, poolSize: 0),
      .init(url: good, poolSize: 1_001), .init(url: good, poolTimeout: 0),
      .init(url: good, connectTimeout: -1),
      .init(url: good, statementTimeout: .nan), .init(url: good, migrationTimeout: .infinity),
      .init(url: good, keepaliveCount: 0), .init(url: good, applicationName: "tab\there"),
    ]
    for configuration in bad {
      let error = #expect(throws: StorageError.self) { try configuration.validate() }
      #expect(error?.code == .invalidArgument)
      #expect(error?.detail.contains("secret") == false)
    }
  }

  @Test func passwordNeverShowsInDescriptionsDumpsOrErrors() throws {
    let password = "Sup3r-s3cret-\(UUID().uuidString)"
    let configuration = PostgresIndex.Configuration(
      url: "postgresql://attachd:\(password)@127.0.0.1:1/attachd?sslmode=disable", connectTimeout: 1)
    #expect(configuration.redactedURL == "postgresql://attachd:***@127.0.0.1:1/attachd?sslmode=disable")
    var dumped = ""
    dump(configuration, to: &dumped)
    for text in ["\(configuration)", String(reflecting: configuration), dumped, configuration.redactedURL] {
      #expect(!text.contains(password), "\(text)")
      #expect(text.contains("***"))
    }
    // Nothing listens on port 1: the connection error names the server, not the password.
    let error = #expect(throws: StorageError.self) { try PostgresIndex(configuration: configuration) }
    #expect(error?.code == .unavailable)
    #expect(error.map { !"\($0)".contains(password) } == true)
    #expect(error?.detail.contains("127.0.0.1:1") == true)
    // A URL libpq cannot parse (a bad escape inside the password) is refused without echoing it.
    let unparsable = PostgresIndex.Configuration(url: "postgresql://attachd:\(password)%zz@127.0.0.1/attachd")
    let parseError = #expect(throws: StorageError.self) { try unparsable.validate() }
    #expect(parseError?.detail.contains(password) == false)
    #expect(!unparsable.description.contains(password))
  }

  @Test func wrongPasswordIsRefusedWithoutShowingEitherPassword() throws {
    let server = try PostgresServer.shared()
    let wrong = "wrong-\(UUID().uuidString)"
    let url = server.url(database: "postgres").replacingOccurrences(of: server.password, with: wrong)
    let error = #expect(throws: StorageError.self) {
      try PostgresIndex(configuration: .init(url: url, connectTimeout: 5))
    }
    #expect(error?.detail.contains("password authentication failed") == true, "\(String(describing: error))")
    for secret in [wrong, server.password] {
      #expect(error.map { !"\($0)".contains(secret) } == true)
      #expect(!server.log.contains(secret))
    }
  }

  @Test func percentEncodedPasswordIsScrubbedInBothSpellings() throws {
    let url = try PostgresURL("postgresql://attachd:p%40ss%2Fw0rd@db.example/attachd")
    #expect(url.password == "p@ss/w0rd")
    #expect(url.scrub("raw p@ss/w0rd and encoded p%40ss%2Fw0rd") == "raw *** and encoded ***")
    #expect(url.redacted == "postgresql://attachd:***@db.example/attachd")
  }

  @Test func urlOptionsAreKeptBesideTheTimeoutsTheIndexSets() throws {
    let configuration = PostgresIndex.Configuration(
      url: "postgresql://u@h/d?options=-csearch_path%3Dtenant_a&connect_timeout=60", connectTimeout: 3,
      statementTimeout: 2.5)
    let parameters = Dictionary(
      configuration.connectionParameters(url: try PostgresURL(configuration.url)), uniquingKeysWith: { $1 })
    #expect(parameters["connect_timeout"] == "3")
    #expect(parameters["keepalives"] == "1")
    let options = try #require(parameters["options"])
    #expect(options.hasPrefix("-csearch_path=tenant_a "))
    #expect(options.contains("-c statement_timeout=2500"))
    #expect(options.contains("-c idle_in_transaction_session_timeout=60000"))
  }

  /// A node holding its liveness lock is alive to every other node; once its session ends (the
  /// process died: here, the index and its session are gone), it is not, within a second or so.
  @Test(.timeLimit(.minutes(1))) func aNodeIsAliveWhileItsSessionLasts() throws {
    let url = try PostgresTestDatabase.freshURL()
    let other = try PostgresIndex(url: url)
    #expect(!other.isInstanceAlive("node-a:1"))
    var node: PostgresIndex? = try PostgresIndex(url: url)
    node?.holdLiveness(node: "node-a:1")
    let deadline = Date().addingTimeInterval(10)
    while !other.isInstanceAlive("node-a:1") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    #expect(other.isInstanceAlive("node-a:1"))
    #expect(!other.isInstanceAlive("node-b:1"))
    node = nil
    let gone = Date().addingTimeInterval(10)
    while other.isInstanceAlive("node-a:1") && Date() < gone { Thread.sleep(forTimeInterval: 0.05) }
    #expect(!other.isInstanceAlive("node-a:1"), "still alive after its index went away")
    _ = node
  }

  /// A running idempotency claim binds other nodes while its node lives (for its 10-minute
  /// lease), and is taken over at once when that node's session ends.
  @Test(.timeLimit(.minutes(1))) func aDeadNodesIdempotencyClaimIsTakenOverAtOnce() throws {
    let url = try PostgresTestDatabase.freshURL()
    let now = Date()
    var nodeA: PostgresIndex? = try PostgresIndex(url: url)
    nodeA?.holdLiveness(node: "node-a:1")
    let nodeB = try PostgresIndex(url: url)
    nodeB.holdLiveness(node: "node-b:1")
    let deadline = Date().addingTimeInterval(10)
    while !nodeB.isInstanceAlive("node-a:1") && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    func begin(_ index: PostgresIndex) throws -> IdempotencyBegin {
      try index.beginIdempotent(
        tenant: "acme", key: "k1", fingerprint: "f", now: now, lifetime: 86_400, lease: 600)
    }
    #expect(try begin(try #require(nodeA)) == .started)
    #expect(try begin(nodeB) == .inProgress)
    nodeA = nil
    let gone = Date().addingTimeInterval(10)
    while nodeB.isInstanceAlive("node-a:1") && Date() < gone { Thread.sleep(forTimeInterval: 0.05) }
    #expect(try begin(nodeB) == .started)
    // Now node B's: a third node waits for it as for any live one.
    let nodeC = try PostgresIndex(url: url)
    nodeC.holdLiveness(node: "node-c:1")
    #expect(try begin(nodeC) == .inProgress)
    _ = nodeA
  }

  @Test func everyRegisteredStatementPreparesAgainstTheCurrentSchema() throws {
    #expect(Set(PostgresStatement.all.map(\.name)).count == PostgresStatement.all.count, "names are unique")
    let index = try PostgresIndex(url: PostgresTestDatabase.freshURL())
    try index.pool.withConnection { connection in
      for statement in PostgresStatement.all { try connection.prepare(statement) }
    }
  }

  @Test(.timeLimit(.minutes(1)))
  func nodesStartingAtOnceMigrateOnce() throws {
    let server = try PostgresServer.shared()
    let database = try server.database(named: PostgresTestDatabase.database)
    let schema = try server.createSchema(in: database)
    let url = server.url(database: database, schema: schema)
    let failures = Failures()
    let indexes = Mutex<[PostgresIndex]>([])
    onThreads(4) { _ in
      do {
        let index = try PostgresIndex(url: url)
        indexes.withLock { $0.append(index) }
      } catch {
        failures.add("\(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    let versions = try server.psql(
      "SELECT version FROM \(schema).attachd_schema ORDER BY version;", database: database)
    #expect(
      versions.split(separator: "\n").map(String.init) == (1...PostgresIndex.schemaVersion).map(String.init))
    let nodes = indexes.withLock { $0 }
    try nodes[0].insert(record("att_1"))
    #expect(try nodes[3].attachment(tenant: "acme", id: "att_1", now: t0) != nil)
  }

  @Test func schemaFromANewerBuildIsRefused() throws {
    let server = try PostgresServer.shared()
    let database = try server.database(named: PostgresTestDatabase.database)
    let schema = try server.createSchema(in: database)
    let url = server.url(database: database, schema: schema)
    _ = try PostgresIndex(url: url)
    try server.psql("INSERT INTO \(schema).attachd_schema (version) VALUES (99);", database: database)
    let error = #expect(throws: StorageError.self) { try PostgresIndex(url: url) }
    #expect(error?.code == .database)
    #expect(error?.detail.contains("newer") == true)
  }

  @Test(.timeLimit(.minutes(1)))
  func poolHoldsAtMostItsSizeAndAnExhaustedPoolIsBusyAfterItsWait() throws {
    let index = try PostgresIndex(
      configuration: .init(url: PostgresTestDatabase.freshURL(), poolSize: 2, poolTimeout: 0.3))
    let failures = Failures()
    onThreads(12) { worker in
      do {
        for number in 0..<10 { try index.insert(record("att_\(worker)_\(number)")) }
      } catch {
        failures.add("\(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    #expect(index.connectionsOpened <= 2)
    // Both connections held: a third caller waits its 0.3 s, then gets .busy.
    let holding = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    for _ in 0..<2 {
      Thread {
        _ = try? index.pool.withConnection { _ in
          holding.signal()
          release.wait()
        }
      }.start()
    }
    holding.wait()
    holding.wait()
    let started = Date()
    let error = #expect(throws: StorageError.self) { try index.statistics() }
    let waited = Date().timeIntervalSince(started)
    release.signal()
    release.signal()
    #expect(error?.code == .busy)
    #expect(waited >= 0.25 && waited < 3, "waited \(waited) s")
    #expect(try index.statistics().attachments == 120)
  }

  @Test func connectionEndedByTheServerIsReplacedWithoutAnError() throws {
    let server = try PostgresServer.shared()
    let name = "attachd-kill-\(UUID().uuidString.prefix(8))"
    let index = try PostgresIndex(
      configuration: .init(url: PostgresTestDatabase.freshURL(), applicationName: name))
    try index.insert(record("att_1"))
    let opened = index.connectionsOpened
    let ended = try server.psql(
      // With a timeout, pg_terminate_backend returns once the backend has gone.
      "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE application_name = :'name';",
      database: "postgres", variables: ["name": name])
    #expect(ended.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    // The idle connection now holds the server's goodbye: it is dropped before use, not tried.
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) != nil)
    #expect(index.connectionsOpened == opened + 1)
  }

  @Test func textHoldingANulByteIsRefusedAsInvalid() throws {
    let index = try PostgresIndex(url: PostgresTestDatabase.freshURL())
    let error = #expect(throws: StorageError.self) {
      try index.attachment(tenant: "acme\u{0}", id: "att_1", now: t0)
    }
    #expect(error?.code == .invalidArgument)
    // The connection stays usable.
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) == nil)
  }

  @Test func sqlStateMapsToStorageErrorKinds() {
    let table: [(String, StorageError.Code)] = [
      ("23505", .conflict), ("57014", .busy), ("40P01", .busy), ("55P03", .busy), ("57P01", .unavailable),
      ("08006", .unavailable), ("53300", .unavailable), ("53100", .full), ("XX001", .corrupt),
      ("22021", .invalidArgument), ("42P01", .database),
    ]
    for (state, code) in table { #expect(PostgresConnection.code(forSQLState: state) == code, "\(state)") }
  }
}
