import Foundation

/// One upload's row in PostgreSQL: its state and lease (`UploadRecord`, whose rules every store
/// applies) and where its bytes are in the object store.
struct S3UploadRow: UploadRow {
  var record: UploadRecord
  /// The size of every part but the last (fixed when the upload is created).
  var partSize: Int
  /// The multipart upload of the data object, once the first part was about to go up.
  var multipartUploadID: String?
  /// Committed parts: numbers 1…`partsCount`, `partsBytes` bytes from offset 0.
  var partsCount: Int
  var partsBytes: Int
  /// The object holding the committed bytes past the parts, `[partsBytes, offset)`; nil when none.
  var tailKey: String?
  /// True once a completed upload's parts were assembled into the data object.
  var assembled: Bool

  var id: String { record.state.id }
}

/// The statements of `S3UploadStore`, on the index's pool: its `UploadRows`, and those on the
/// columns of `S3UploadBytes`.
extension PostgresIndex: UploadRows {
  func insertUpload(_ row: S3UploadRow) throws {
    try query(.insertUpload, Self.uploadValues(row))
  }

  /// The tenant's unexpired upload, or nil.
  func uploadRow(id: String, tenant: String, now: Date) throws -> S3UploadRow? {
    try query(.uploadRow, [.text(id), .text(tenant), .integer(Self.seconds(now))]).first.map(
      Self.decodeUpload)
  }

  /// Runs `body` on the tenant's unexpired row, locked, in one transaction, and stores what it
  /// changed; nil (and `body` not run) when there is no such row. A throw rolls everything back.
  func updateUpload<T>(id: String, tenant: String, now: Date, _ body: (inout S3UploadRow) throws -> T)
    throws -> T?
  {
    try pool.withConnection { connection in
      try connection.transaction {
        guard
          let found = try connection.query(
            .lockUploadRow, [.text(id), .text(tenant), .integer(Self.seconds(now))]
          ).first
        else { return nil }
        let before = try Self.decodeUpload(found)
        var row = before
        let result = try body(&row)
        if row != before {
          var values = Self.uploadValues(row)
          // id, then the columns from length on (the identity and creation never change).
          values =
            [values[0]] + values[5...7] + values[8...12] + [values[14]] + values[15...17]
            + [values[19], values[20], values[21], values[22], values[23]]
          try connection.query(.updateUploadRow, values)
        }
        return result
      }
    }
  }

  /// Moves the offset from `from` to `to` with the parts added since and the new tail, if
  /// `token` holds the lease; renews it until `leaseUntil` or releases it (nil).
  func commitUploadOffset(
    id: String, token: String, from: Int, to: Int, leaseUntil: Date?, partsCount: Int, partsBytes: Int,
    tailKey: String?, newParts: [S3UploadedPart]
  ) throws -> UploadCommit {
    let rows = try query(
      .commitUploadOffset,
      [
        .text(id), .text(token), leaseUntil.map { .integer(SQLiteIndex.milliseconds($0)) } ?? .null,
        .integer(Int64(from)), .integer(Int64(to)), .integer(Int64(partsCount)), .integer(Int64(partsBytes)),
        tailKey.map(PostgresValue.text) ?? .null,
        .text(Self.arrayLiteral(newParts.map { String($0.number) })),
        .text(Self.arrayLiteral(newParts.map { Self.quotedArrayElement($0.etag) })),
        .text(Self.arrayLiteral(newParts.map { String($0.size) })),
      ])
    guard let row = rows.first else { return .lost }
    return .committed(wanted: row.bool(0))
  }

  /// Records the multipart upload a writer holding `token`'s lease started; false when the
  /// lease is lost (or one was recorded meanwhile).
  func setMultipartUpload(id: String, token: String, uploadID: String) throws -> Bool {
    try query(.setMultipartUpload, [.text(id), .text(token), .text(uploadID)]).first != nil
  }

  /// The committed parts, by number.
  func uploadParts(id: String) throws -> [S3UploadedPart] {
    try query(.uploadParts, [.text(id)]).all.map {
      S3UploadedPart(number: $0.int(0), etag: $0.text(1) ?? "", size: $0.int(2))
    }
  }

  /// Notes that the parts are assembled, if `token` still holds the processing claim.
  func markUploadAssembled(id: String, token: String) throws -> Bool {
    try query(.markUploadAssembled, [.text(id), .text(token)]).first != nil
  }

  /// Deletes the tenant's upload (expired or not) and returns it, or nil.
  func deleteUpload(id: String, tenant: String) throws -> S3UploadRow? {
    try query(.deleteUpload, [.text(id), .text(tenant)]).first.map(Self.decodeUpload)
  }

  /// Deletes up to `limit` uploads expired at `now` that no other node is deleting.
  func deleteExpiredUploads(now: Date, limit: Int) throws -> [S3UploadRow] {
    try query(.deleteExpiredUploads, [.integer(Self.seconds(now)), .integer(Int64(max(0, limit)))]).all
      .map(Self.decodeUpload)
  }

  /// Releases every lease held by tokens of `instance` (a node's own, when it restarts).
  func clearUploadLeases(instance: String) throws -> Int {
    try query(.clearUploadLeases, [.text(instance + ".")]).affected
  }

  /// The rows among `ids` (expired ones included) and where their objects are.
  func uploadObjects(ids: [String]) throws -> [String: (multipartUploadID: String?, tailKey: String?)] {
    guard !ids.isEmpty else { return [:] }
    var found: [String: (String?, String?)] = [:]
    for row in try query(.uploadsByID, [.text(Self.arrayLiteral(ids.map(Self.quotedArrayElement)))]).all {
      if let id = row.text(0) { found[id] = (row.text(1), row.text(2)) }
    }
    return found
  }

  // MARK: - Conversions

  private static func arrayLiteral(_ elements: [String]) -> String {
    "{" + elements.joined(separator: ",") + "}"
  }

  /// An element of a text array literal, quoted: ETags carry double quotes themselves.
  private static func quotedArrayElement(_ text: String) -> String {
    "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
      + "\""
  }

  private static func uploadValues(_ row: S3UploadRow) -> [PostgresValue] {
    let state = row.record.state
    let response = state.result?.response
    return [
      .text(state.id), .text(state.tenant), state.owner.map(PostgresValue.text) ?? .null,
      .text(state.protocolName), .bytes(state.metadata), state.length.map { .integer(Int64($0)) } ?? .null,
      .integer(Int64(state.maxLength)), .integer(Int64(state.offset)), .text(state.status.rawValue),
      state.result?.attachmentID.map(PostgresValue.text) ?? .null,
      response.map { .integer(Int64($0.status)) } ?? .null,
      response.map { .text(StoredHeaders.encode($0.headers)) } ?? .null,
      response.map { .bytes($0.body) } ?? .null,
      .integer(seconds(state.createdAt)), .integer(seconds(state.expiresAt)),
      row.record.leaseHolder.map(PostgresValue.text) ?? .null,
      row.record.leaseExpiresAt.map { .integer(SQLiteIndex.milliseconds($0)) } ?? .null,
      .text(row.record.leaseWanted ? "true" : "false"), .integer(Int64(row.partSize)),
      row.multipartUploadID.map(PostgresValue.text) ?? .null, .integer(Int64(row.partsCount)),
      .integer(Int64(row.partsBytes)), row.tailKey.map(PostgresValue.text) ?? .null,
      .text(row.assembled ? "true" : "false"),
    ]
  }

  private static func decodeUpload(_ row: PostgresRow) throws -> S3UploadRow {
    guard row.values.count == 24, let id = row.text(0), let tenant = row.text(1),
      let protocolName = row.text(3),
      let maxLength = row.integer(6), let offset = row.integer(7),
      let status = row.text(8).flatMap(UploadStatus.init(rawValue:)), let created = row.integer(13),
      let expires = row.integer(14), let partSize = row.integer(18)
    else { throw StorageError(.corrupt, "malformed upload row") }
    var result: UploadResult?
    if let code = row.integer(10) {
      result = UploadResult(
        attachmentID: row.text(9),
        response: StoredResponse(
          status: Int(code), headers: StoredHeaders.decode(row.text(11) ?? ""), body: row.bytes(12) ?? []))
    }
    let state = UploadState(
      id: id, tenant: tenant, owner: row.text(2), protocolName: protocolName, metadata: row.bytes(4) ?? [],
      length: row.integer(5).map { Int($0) }, maxLength: Int(maxLength), offset: Int(offset), status: status,
      result: result, createdAt: Date(timeIntervalSince1970: TimeInterval(created)),
      expiresAt: Date(timeIntervalSince1970: TimeInterval(expires)))
    let record = UploadRecord(
      state: state, leaseHolder: row.text(15),
      leaseExpiresAt: row.integer(16).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) },
      leaseWanted: row.bool(17))
    return S3UploadRow(
      record: record, partSize: Int(partSize), multipartUploadID: row.text(19), partsCount: row.int(20),
      partsBytes: row.int(21), tailKey: row.text(22), assembled: row.bool(23))
  }
}
