import Foundation
import Synchronization

/// The attachment index in PostgreSQL, shared by every attachd node.
///
/// Threads: a bounded pool of connections (`Configuration.poolSize`); each call takes one for
/// its duration. Statements are prepared once per connection (`PostgresStatement`) and every
/// value is a bound parameter. A connection that breaks is replaced on the next call, so the
/// index outlives a PostgreSQL restart; while the server is down or silent, calls fail with
/// `.unavailable` within the configured timeouts.
///
/// Nodes: the schema is migrated at start under an advisory lock; expired rows and idempotency
/// keys are claimed with `FOR UPDATE SKIP LOCKED`, so sweeping nodes split the work and each
/// row goes once; blob reference counts change in the statement that adds or removes a row;
/// a blob is collected only while its row is locked and after every pin is seen.
public final class PostgresIndex: AttachmentIndex {
  /// The settings the index was opened with (its description hides the password).
  public let configuration: Configuration
  let pool: PostgresConnectionPool
  /// Opens a connection like the pool's (the node-liveness session has one of its own).
  let connect: @Sendable () throws -> PostgresConnection
  /// This process's liveness session, once `holdLiveness(node:)` started it.
  let liveness = Mutex<NodeLiveness?>(nil)
  /// The schema the index lives in: node liveness locks are named within it (advisory locks
  /// are per database, and several clusters may share one database in their own schemas).
  let livenessScope: String

  /// Connects, and migrates the schema to `schemaVersion` (once, whichever node comes first).
  ///
  /// Throws `.unavailable` when the server cannot be reached within `connectTimeout`.
  public init(configuration: Configuration) throws {
    try configuration.validate()
    self.configuration = configuration
    let url = try PostgresURL(configuration.url)
    let parameters = configuration.connectionParameters(url: url)
    let connectTimeout = Duration.milliseconds(Int64(configuration.connectTimeout * 1_000))
    // A server that has not answered a second after its own statement_timeout would have
    // cancelled the statement is gone or frozen, not busy.
    let responseTimeout = Duration.milliseconds(Int64(configuration.statementTimeout * 1_000) + 1_000)
    let connect: @Sendable () throws -> PostgresConnection = {
      try PostgresConnection(
        parameters: parameters, url: url, timeout: connectTimeout, responseTimeout: responseTimeout)
    }
    self.connect = connect
    pool = PostgresConnectionPool(
      size: configuration.poolSize, waitTimeout: configuration.poolTimeout, connect: connect)
    try pool.withConnection { try Self.migrate($0, timeout: configuration.migrationTimeout) }
    livenessScope = try pool.withConnection { try $0.execute("SELECT current_schema()").first?.text(0) } ?? ""
  }

  /// Opens the index at `url` with default settings.
  public convenience init(url: String) throws {
    try self.init(configuration: Configuration(url: url))
  }

  /// Connections opened so far (a restarted server shows as new ones).
  public var connectionsOpened: Int { pool.connectionsOpened }

  // MARK: - Attachments

  public func insert(_ record: AttachmentRecord) throws {
    let source = record.source
    try query(
      .insertAttachment,
      [
        .text(record.id), .text(record.tenant), .text(record.blob.hex), .text(record.contentType),
        .integer(Int64(record.width)), .integer(Int64(record.height)), .integer(Int64(record.bytes)),
        .text(source.format), .integer(Int64(source.width)), .integer(Int64(source.height)),
        .integer(Int64(source.bytes)), .integer(Int64(source.orientation)),
        source.orientationSource.map(PostgresValue.text) ?? .null,
        source.colourProfile.map(PostgresValue.text) ?? .null,
        .integer(Self.seconds(record.createdAt)), .integer(Self.seconds(record.expiresAt)),
        record.owner.map(PostgresValue.text) ?? .null, .text(record.kind),
        record.details.map(PostgresValue.text) ?? .null,
      ])
  }

  public func attachment(tenant: String, id: String, now: Date) throws -> AttachmentRecord? {
    try query(.attachment, [.text(id), .text(tenant), .integer(Self.seconds(now))]).first.map(Self.record)
  }

  public func tenant(ofAttachment id: String, now: Date) throws -> String? {
    try query(.tenantOfAttachment, [.text(id), .integer(Self.seconds(now))]).first?.text(0)
  }

  public func deleteAttachment(tenant: String, id: String) throws -> AttachmentRecord? {
    try pool.withConnection { connection in
      try connection.transaction {
        let rows = try connection.query(.deleteAttachment, [.text(id), .text(tenant)]).all.map(Self.record)
        try Self.release(rows, on: connection)
        return rows.first
      }
    }
  }

  public func deleteExpired(now: Date, limit: Int) throws -> [AttachmentRecord] {
    try pool.withConnection { connection in
      try connection.transaction {
        let rows = try connection.query(
          .deleteExpiredAttachments, [.integer(Self.seconds(now)), .integer(Int64(max(0, limit)))]
        ).all.map(Self.record)
        try Self.release(rows, on: connection)
        return rows
      }
    }
  }

  /// Deletes the renditions of deleted attachment rows and drops every blob reference the rows
  /// and renditions held, blob rows locked in hash order (inside the caller's transaction).
  private static func release(_ rows: [AttachmentRecord], on connection: PostgresConnection) throws {
    guard !rows.isEmpty else { return }
    var released: [String: Int] = [:]
    for row in rows { released[row.blob.hex, default: 0] += 1 }
    // Ids are `att_` + base64url: nothing to quote inside an array literal.
    let ids = PostgresValue.text("{" + rows.map(\.id).joined(separator: ",") + "}")
    for row in try connection.query(.deleteRenditionsOf, [ids]).all {
      if let blob = row.text(0) { released[blob, default: 0] += 1 }
    }
    let hashes = released.keys.sorted()
    // Hex hashes and integers need no quoting inside an array literal.
    let hashArray = PostgresValue.text("{" + hashes.joined(separator: ",") + "}")
    let counts = PostgresValue.text("{" + hashes.map { String(released[$0]!) }.joined(separator: ",") + "}")
    try connection.query(.lockBlobsInOrder, [hashArray])
    try connection.query(.releaseBlobReferences, [hashArray, counts])
  }

  public func referenceCount(of blob: BlobHash) throws -> Int {
    try query(.referenceCount, [.text(blob.hex)]).first?.int(0) ?? 0
  }

  public func statistics() throws -> IndexStatistics {
    guard let row = try query(.statistics).first else {
      throw StorageError(.database, "PostgreSQL statistics returned no row")
    }
    return IndexStatistics(
      attachments: row.int(0), attachmentBytes: row.int(1), blobs: row.int(2), blobBytes: row.int(3),
      idempotencyKeys: row.int(4))
  }

  // MARK: - Tenants

  public func setRetention(_ retention: TimeInterval?, tenant: String) throws {
    if let retention {
      try query(.setRetention, [.text(tenant), .real(retention)])
    } else {
      try query(.clearRetention, [.text(tenant)])
    }
  }

  public func retention(tenant: String) throws -> TimeInterval? {
    try query(.retention, [.text(tenant)]).first?.real(0)
  }

  // MARK: - Health

  public func checkWritable(now: Date) throws {
    try query(.checkWritable, [.integer(Self.seconds(now))])
  }

  // MARK: - Helpers

  /// Runs one statement on a pooled connection.
  @discardableResult
  func query(_ statement: PostgresStatement, _ parameters: [PostgresValue] = []) throws -> PostgresRows {
    try pool.withConnection { try $0.query(statement, parameters) }
  }

  static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

  /// The end of a lease of `lease` seconds from `now`, in whole seconds (never shorter than asked).
  static func leaseEnd(_ now: Date, _ lease: TimeInterval) -> Int64 {
    seconds(now) + Int64(max(0, lease).rounded(.up))
  }

  private static func record(_ row: PostgresRow) throws -> AttachmentRecord {
    guard row.values.count == 19, let id = row.text(0), let tenant = row.text(1),
      let blob = row.text(2).flatMap(BlobHash.init(hex:)), let contentType = row.text(3),
      let format = row.text(7), let created = row.integer(14), let expires = row.integer(15)
    else { throw StorageError(.corrupt, "malformed attachment row") }
    let source = SourceInfo(
      format: format, width: row.int(8), height: row.int(9), bytes: row.int(10), orientation: row.int(11),
      orientationSource: row.text(12), colourProfile: row.text(13))
    return AttachmentRecord(
      id: id, tenant: tenant, blob: blob, contentType: contentType, width: row.int(4), height: row.int(5),
      bytes: row.int(6), source: source, createdAt: Date(timeIntervalSince1970: TimeInterval(created)),
      expiresAt: Date(timeIntervalSince1970: TimeInterval(expires)), owner: row.text(16),
      kind: row.text(17) ?? "image", details: row.text(18))
  }
}
