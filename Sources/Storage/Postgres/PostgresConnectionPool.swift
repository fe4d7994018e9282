import Dispatch
import Foundation
import Synchronization

/// At most `size` connections to one database, opened when needed and kept while healthy.
///
/// A caller waits up to `waitTimeout` for a free slot (`.busy` after that). A connection that
/// broke during a call, or that the server closed while it sat idle (a restart), is dropped
/// and the next call opens a new one: the index recovers from a PostgreSQL restart by itself.
final class PostgresConnectionPool: Sendable {
  private let slots: DispatchSemaphore
  private let idle = Mutex<[PostgresConnection]>([])
  private let opened = Atomic<Int>(0)
  private let size: Int
  private let waitTimeout: TimeInterval
  private let connect: @Sendable () throws -> PostgresConnection

  /// A pool of `size` connections made by `connect`.
  init(size: Int, waitTimeout: TimeInterval, connect: @escaping @Sendable () throws -> PostgresConnection) {
    self.size = size
    self.slots = DispatchSemaphore(value: size)
    self.waitTimeout = waitTimeout
    self.connect = connect
  }

  /// Connections opened so far (for tests: proves reuse and replacement).
  var connectionsOpened: Int { opened.load(ordering: .relaxed) }

  /// Runs `body` with a connection of its own for the call.
  func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
    guard slots.wait(timeout: .now() + waitTimeout) == .success else {
      throw StorageError(.busy, "all \(size) PostgreSQL connections stayed in use for \(waitTimeout) s")
    }
    defer { slots.signal() }
    let connection = try takeIdle() ?? open()
    defer {
      if connection.isReusable { idle.withLock { $0.append(connection) } }
    }
    return try body(connection)
  }

  /// Drops every idle connection (tests use it to force fresh connections).
  func closeIdle() { idle.withLock { $0.removeAll() } }

  private func takeIdle() -> PostgresConnection? {
    while let candidate = idle.withLock({ $0.popLast() }) {
      if candidate.isReusable { return candidate }
    }
    return nil
  }

  private func open() throws -> PostgresConnection {
    let connection = try connect()
    opened.add(1, ordering: .relaxed)
    return connection
  }
}
