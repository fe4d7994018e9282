import Foundation
import Glibc
import TestSupport
import Testing

@testable import Storage

/// PostgresIndex against a server that stops, freezes, restarts or holds a lock: each failure
/// is a distinct `StorageError` kind within the configured time, and the same index instance
/// works again once the server does. Each test that harms its server starts its own.
@Suite struct PostgresFaultTests {
  private func makeIndex(
    on server: PostgresServer, connectTimeout: TimeInterval = 2, statementTimeout: TimeInterval = 1
  )
    throws -> PostgresIndex
  {
    let database = try server.createDatabase()
    return try PostgresIndex(
      configuration: .init(
        url: server.url(database: database), connectTimeout: connectTimeout,
        statementTimeout: statementTimeout))
  }

  /// How long `body` takes, and the storage error it threw (nil when it succeeded).
  private func timed(_ body: () throws -> Void) -> (seconds: TimeInterval, error: StorageError?) {
    let started = Date()
    do {
      try body()
      return (Date().timeIntervalSince(started), nil)
    } catch {
      return (Date().timeIntervalSince(started), error as? StorageError)
    }
  }

  @Test(.timeLimit(.minutes(2)))
  func stoppedServerIsUnavailableAndTheSameIndexWorksAfterARestart() throws {
    let server = try PostgresServer()
    let index = try makeIndex(on: server)
    try index.insert(record("att_1"))
    let opened = index.connectionsOpened

    server.stop()
    for _ in 0..<3 {
      let (seconds, error) = timed { _ = try index.attachment(tenant: "acme", id: "att_1", now: t0) }
      #expect(error?.code == .unavailable, "\(String(describing: error))")
      #expect(seconds < 2 + 1, "took \(seconds) s")
    }
    #expect(throws: StorageError.self) { try index.checkWritable(now: t0) }

    try server.start()
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) == record("att_1"))
    try index.insert(record("att_2"))
    try index.checkWritable(now: t0)
    #expect(index.connectionsOpened > opened)
  }

  @Test(.timeLimit(.minutes(2)))
  func frozenServerIsUnavailableWithinTheTimeoutsAndRecoversWhenItRunsAgain() throws {
    let server = try PostgresServer()
    let index = try makeIndex(on: server, connectTimeout: 1.5, statementTimeout: 1)
    try index.insert(record("att_1"))

    server.pause()
    defer { server.resume() }
    // An open connection waits for an answer up to the statement timeout plus one second.
    var (seconds, error) = timed { _ = try index.attachment(tenant: "acme", id: "att_1", now: t0) }
    #expect(error?.code == .unavailable, "\(String(describing: error))")
    #expect(seconds >= 1.9 && seconds < 2 + 1.5, "took \(seconds) s")
    // A new connection waits for the server's greeting up to the connect timeout.
    (seconds, error) = timed { _ = try index.attachment(tenant: "acme", id: "att_1", now: t0) }
    #expect(error?.code == .unavailable, "\(String(describing: error))")
    #expect(seconds >= 1.4 && seconds < 1.5 + 1.5, "took \(seconds) s")

    server.resume()
    var found: AttachmentRecord?
    // The server first works through what queued up while it was frozen.
    let deadline = Date().addingTimeInterval(20)
    while found == nil && Date() < deadline {
      found = try? index.attachment(tenant: "acme", id: "att_1", now: t0)
    }
    #expect(found == record("att_1"))
  }

  @Test(.timeLimit(.minutes(1)))
  func serverThatAcceptsButNeverAnswersIsUnavailableAfterTheConnectTimeout() throws {
    // A socket that listens and never accepts: the kernel completes the handshake, nothing speaks.
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(listener) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let listening = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && listen(listener, 16) == 0
          && getsockname(listener, $0, &length) == 0
      }
    }
    try #require(listening)
    let port = UInt16(bigEndian: address.sin_port)
    let (seconds, error) = timed {
      _ = try PostgresIndex(
        configuration: .init(url: "postgresql://attachd:pw@127.0.0.1:\(port)/attachd", connectTimeout: 0.8))
    }
    #expect(error?.code == .unavailable, "\(String(describing: error))")
    #expect(seconds >= 0.75 && seconds < 2, "took \(seconds) s")
  }

  @Test(.timeLimit(.minutes(1)))
  func statementWaitingPastItsTimeoutIsBusyNotUnavailable() throws {
    let server = try PostgresServer.shared()
    let database = try server.createDatabase()
    let index = try PostgresIndex(
      configuration: .init(url: server.url(database: database), statementTimeout: 0.5))
    try server.psqlInBackground(
      "BEGIN; LOCK TABLE health IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;", database: database)
    // Wait until the other session holds the lock.
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      let held = try server.psql(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'health' AND l.granted AND l.mode = 'AccessExclusiveLock';",
        database: database)
      if held.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { break }
      usleep(20_000)
    }
    let (seconds, error) = timed { try index.checkWritable(now: t0) }
    #expect(error?.code == .busy, "\(String(describing: error))")
    #expect(seconds >= 0.45 && seconds < 1.5, "took \(seconds) s")
    // Reads of other tables go on; the connection was not given up.
    #expect(try index.statistics().attachments == 0)
  }
}
