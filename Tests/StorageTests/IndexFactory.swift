import Foundation
import Storage
import TestSupport
import Testing

/// Makes one `AttachmentIndex` implementation, empty; the conformance suites run once per factory.
struct IndexFactory: Sendable, CustomTestStringConvertible {
  let name: String
  /// One index in a fresh directory (the file backends) or a fresh schema (PostgreSQL).
  let make: @Sendable (String) throws -> any AttachmentIndex
  /// Two indexes over the same fresh data, as two attachd nodes see a shared index.
  let makeNodes: @Sendable (String) throws -> (any AttachmentIndex, any AttachmentIndex)
  var testDescription: String { name }

  static let sqlite = IndexFactory(
    name: "SQLiteIndex", make: { try SQLiteIndex(path: $0 + "/index.sqlite") },
    makeNodes: { (try SQLiteIndex(path: $0 + "/index.sqlite"), try SQLiteIndex(path: $0 + "/index.sqlite")) })

  static let postgres = IndexFactory(
    name: "PostgresIndex", make: { _ in try PostgresIndex(url: PostgresTestDatabase.freshURL()) },
    makeNodes: { _ in
      let url = try PostgresTestDatabase.freshURL()
      return (try PostgresIndex(url: url), try PostgresIndex(url: url))
    })

  // The in-memory index proves the suite is generic.
  static let all: [IndexFactory] = [
    sqlite,
    IndexFactory(
      name: "SQLiteIndex(NORMAL)",
      make: { try SQLiteIndex(configuration: .init(path: $0 + "/index.sqlite", synchronous: .normal)) },
      makeNodes: { directory in
        let configuration = SQLiteIndex.Configuration(path: directory + "/index.sqlite", synchronous: .normal)
        return (try SQLiteIndex(configuration: configuration), try SQLiteIndex(configuration: configuration))
      }),
    postgres,
    IndexFactory(
      name: "InMemoryIndex", make: { _ in InMemoryIndex() },
      makeNodes: { _ in
        let index = InMemoryIndex()
        return (index, index.sibling())
      }),
  ]
}

/// The Storage tests' PostgreSQL: the process's shared server, one database for these suites,
/// and a fresh schema (an empty index) per call.
enum PostgresTestDatabase {
  static let database = "storage"

  /// A URL whose search path is a new, empty schema.
  static func freshURL() throws -> String {
    let server = try PostgresServer.shared()
    let database = try server.database(named: database)
    return server.url(database: database, schema: try server.createSchema(in: database))
  }
}
