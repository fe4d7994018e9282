import Foundation

/// The `uploads` table: every statement `FileUploadStore` runs, in one place (its `UploadRows`,
/// the offset commit of its spool and its recovery's).
///
/// Decisions (lease, length, completion) are made by `UploadRecord` in Swift inside one
/// `BEGIN IMMEDIATE` transaction (`updateUpload`); only the hot path, the offset commit of a
/// flush, is a single conditional statement that needs no read.
extension SQLiteIndex: UploadRows {
  private static let uploadColumns = """
    id, tenant, owner, protocol, metadata, length, max_length, received, state, result_attachment, \
    result_status, result_headers, result_body, created_at, expires_at, lease_holder, lease_expires_at_ms, \
    lease_wanted
    """

  func insertUpload(_ record: UploadRecord) throws {
    let values = Self.uploadValues(record)
    let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
    try write { try $0.query("INSERT INTO uploads (\(Self.uploadColumns)) VALUES (\(placeholders))", values) }
  }

  /// The tenant's unexpired upload row, or nil.
  func uploadRow(id: String, tenant: String, now: Date) throws -> UploadRecord? {
    let rows = try read {
      try $0.query(
        "SELECT \(Self.uploadColumns) FROM uploads WHERE id = ? AND tenant = ? AND expires_at > ?",
        [.text(id), .text(tenant), .integer(Self.seconds(now))])
    }
    return try rows.first.map(Self.decodeUpload)
  }

  /// Runs `body` on the tenant's unexpired row inside one write transaction and stores what it
  /// changed; nil (and `body` not run) when there is no such row. A throw rolls everything back.
  func updateUpload<T>(id: String, tenant: String, now: Date, _ body: (inout UploadRecord) throws -> T)
    throws -> T?
  {
    try write { connection in
      try connection.transaction {
        let rows = try connection.query(
          "SELECT \(Self.uploadColumns) FROM uploads WHERE id = ? AND tenant = ? AND expires_at > ?",
          [.text(id), .text(tenant), .integer(Self.seconds(now))])
        guard let row = rows.first else { return nil }
        let before = try Self.decodeUpload(row)
        var record = before
        let result = try body(&record)
        if record != before {
          var values = Array(Self.uploadValues(record)[5...])
          values.append(.text(id))
          try connection.query(
            """
            UPDATE uploads SET length = ?, max_length = ?, received = ?, state = ?, result_attachment = ?,
              result_status = ?, result_headers = ?, result_body = ?, created_at = ?, expires_at = ?,
              lease_holder = ?, lease_expires_at_ms = ?, lease_wanted = ?
            WHERE id = ?
            """, values)
        }
        return result
      }
    }
  }

  /// Advances a receiving upload's offset from `from` to `to` if `token` still holds its lease;
  /// renews the lease until `expiry`, or releases it when `expiry` is nil.
  ///
  /// Unless `sync`, the statement commits without waiting for the WAL to reach the disk (see
  /// `UploadStoreConfiguration.syncOffsetCommits`); the next synced commit makes it durable.
  func commitUploadOffset(
    id: String, token: String, from: Int, to: Int, leaseUntil expiry: Date?, sync: Bool = true
  ) throws -> UploadCommit {
    let rows = try write { connection -> [[SQLValue]] in
      // One writer connection behind the mutex: the relaxed setting covers this statement only.
      let relax = !sync && configuration.synchronous == .full
      if relax { try connection.execute("PRAGMA synchronous = NORMAL") }
      let rows: [[SQLValue]]
      do {
        rows = try Self.runOffsetCommit(connection, id: id, token: token, from: from, to: to, expiry: expiry)
      } catch {
        if relax { try? connection.execute("PRAGMA synchronous = FULL") }
        throw error
      }
      if relax { try connection.execute("PRAGMA synchronous = FULL") }
      return rows
    }
    guard let row = rows.first else { return .lost }
    return .committed(wanted: (row[0].integer ?? 0) != 0)
  }

  private static func runOffsetCommit(
    _ connection: SQLiteConnection, id: String, token: String, from: Int, to: Int, expiry: Date?
  ) throws -> [[SQLValue]] {
    if let expiry {
      return try connection.query(
        """
        UPDATE uploads SET received = ?, lease_expires_at_ms = ?
        WHERE id = ? AND lease_holder = ? AND received = ? AND state = 'receiving'
        RETURNING lease_wanted
        """,
        [.integer(Int64(to)), .integer(milliseconds(expiry)), .text(id), .text(token), .integer(Int64(from))])
    }
    return try connection.query(
      """
      UPDATE uploads SET received = ?, lease_holder = NULL, lease_expires_at_ms = NULL, lease_wanted = 0
      WHERE id = ? AND lease_holder = ? AND received = ? AND state = 'receiving'
      RETURNING lease_wanted
      """, [.integer(Int64(to)), .text(id), .text(token), .integer(Int64(from))])
  }

  /// Deletes the tenant's upload row (expired or not) and returns it; nil when there was none.
  func deleteUpload(id: String, tenant: String) throws -> UploadRecord? {
    let rows = try write {
      try $0.query(
        "DELETE FROM uploads WHERE id = ? AND tenant = ? RETURNING \(Self.uploadColumns)",
        [.text(id), .text(tenant)])
    }
    return try rows.first.map(Self.decodeUpload)
  }

  /// Deletes up to `limit` rows that expired at or before `now` and returns them.
  func deleteExpiredUploads(now: Date, limit: Int) throws -> [UploadRecord] {
    let rows = try write {
      try $0.query(
        """
        DELETE FROM uploads WHERE id IN
          (SELECT id FROM uploads WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)
        RETURNING \(Self.uploadColumns)
        """, [.integer(Self.seconds(now)), .integer(Int64(max(0, limit)))])
    }
    return try rows.map(Self.decodeUpload)
  }

  /// Releases every lease held by `instance`'s writers, or by anyone when `instance` is nil.
  func clearUploadLeases(instance: String?) throws -> Int {
    try write { connection in
      if let instance {
        try connection.query(
          """
          UPDATE uploads SET lease_holder = NULL, lease_expires_at_ms = NULL, lease_wanted = 0
          WHERE substr(lease_holder, 1, ?) = ?
          """, [.integer(Int64(instance.utf8.count + 1)), .text(instance + ".")])
      } else {
        try connection.query(
          """
          UPDATE uploads SET lease_holder = NULL, lease_expires_at_ms = NULL, lease_wanted = 0
          WHERE lease_holder IS NOT NULL
          """)
      }
      return connection.changes
    }
  }

  /// Every upload's id, status, offset and length (for start-up recovery of the spool files).
  func uploadOffsets() throws -> [String: (status: UploadStatus, offset: Int, length: Int?)] {
    let rows = try read { try $0.query("SELECT id, state, received, length FROM uploads") }
    var offsets: [String: (status: UploadStatus, offset: Int, length: Int?)] = [:]
    for row in rows {
      guard let id = row[0].text, let status = row[1].text.flatMap(UploadStatus.init(rawValue:)) else {
        continue
      }
      offsets[id] = (status, Int(row[2].integer ?? 0), row[3].integer.map { Int($0) })
    }
    return offsets
  }

  /// Lowers a receiving upload's offset to what its spool file really holds (recovery only).
  func lowerUploadOffset(id: String, to offset: Int) throws {
    try write {
      try $0.query(
        "UPDATE uploads SET received = ? WHERE id = ? AND received > ? AND state = 'receiving'",
        [.integer(Int64(offset)), .text(id), .integer(Int64(offset))])
    }
  }

  // MARK: - Conversions

  static func milliseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
  }

  private static func uploadValues(_ record: UploadRecord) -> [SQLValue] {
    let state = record.state
    let response = state.result?.response
    return [
      .text(state.id), .text(state.tenant), state.owner.map(SQLValue.text) ?? .null,
      .text(state.protocolName),
      .blob(state.metadata), state.length.map { .integer(Int64($0)) } ?? .null,
      .integer(Int64(state.maxLength)),
      .integer(Int64(state.offset)), .text(state.status.rawValue),
      state.result?.attachmentID.map(SQLValue.text) ?? .null,
      response.map { .integer(Int64($0.status)) } ?? .null,
      response.map { .text(StoredHeaders.encode($0.headers)) } ?? .null,
      response.map { .blob($0.body) } ?? .null,
      .integer(seconds(state.createdAt)), .integer(seconds(state.expiresAt)),
      record.leaseHolder.map(SQLValue.text) ?? .null,
      record.leaseExpiresAt.map { .integer(milliseconds($0)) } ?? .null,
      .integer(record.leaseWanted ? 1 : 0),
    ]
  }

  private static func decodeUpload(_ row: [SQLValue]) throws -> UploadRecord {
    guard row.count == 18, let id = row[0].text, let tenant = row[1].text, let protocolName = row[3].text,
      let maxLength = row[6].integer, let offset = row[7].integer,
      let status = row[8].text.flatMap(UploadStatus.init(rawValue:))
    else { throw StorageError(.corrupt, "malformed upload row") }
    var result: UploadResult?
    if let code = row[10].integer {
      result = UploadResult(
        attachmentID: row[9].text,
        response: StoredResponse(
          status: Int(code), headers: StoredHeaders.decode(row[11].text ?? ""), body: row[12].bytes ?? []))
    }
    let state = UploadState(
      id: id, tenant: tenant, owner: row[2].text, protocolName: protocolName, metadata: row[4].bytes ?? [],
      length: row[5].integer.map { Int($0) }, maxLength: Int(maxLength), offset: Int(offset), status: status,
      result: result, createdAt: date(row[13]), expiresAt: date(row[14]))
    return UploadRecord(
      state: state, leaseHolder: row[15].text,
      leaseExpiresAt: row[16].integer.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) },
      leaseWanted: (row[17].integer ?? 0) != 0)
  }
}
