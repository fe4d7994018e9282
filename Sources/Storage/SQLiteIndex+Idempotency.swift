import Foundation

extension SQLiteIndex {
  public func beginIdempotent(
    tenant: String, key: String, fingerprint: String, now: Date, lifetime: TimeInterval
  ) throws -> IdempotencyBegin {
    let nowSeconds = Self.seconds(now)
    return try write { connection in
      // Read and claim in one IMMEDIATE transaction: two requests with one key cannot both start.
      try connection.transaction {
        let rows = try connection.query(
          "SELECT fingerprint, state, status, headers, body, created_at FROM idempotency_keys WHERE tenant = ? AND key = ?",
          [.text(tenant), .text(key)])
        if let row = rows.first, Double(nowSeconds - (row[5].integer ?? 0)) < lifetime {
          guard row[0].text == fingerprint else { return .mismatch }
          guard row[1].text == "done" else { return .inProgress }
          return .completed(
            StoredResponse(
              status: Int(row[2].integer ?? 0), headers: Self.decodeHeaders(row[3].text ?? ""),
              body: row[4].bytes ?? []))
        }
        try connection.query(
          """
          INSERT OR REPLACE INTO idempotency_keys (tenant, key, fingerprint, state, created_at)
          VALUES (?, ?, ?, 'running', ?)
          """, [.text(tenant), .text(key), .text(fingerprint), .integer(nowSeconds)])
        return .started
      }
    }
  }

  public func completeIdempotent(tenant: String, key: String, response: StoredResponse) throws {
    try write { connection in
      try connection.query(
        """
        UPDATE idempotency_keys SET state = 'done', status = ?, headers = ?, body = ?
        WHERE tenant = ? AND key = ? AND state = 'running'
        """,
        [
          .integer(Int64(response.status)), .text(Self.encodeHeaders(response.headers)), .blob(response.body),
          .text(tenant), .text(key),
        ])
      guard connection.changes == 1 else {
        throw StorageError(.notFound, "no running idempotency claim to complete")
      }
    }
  }

  public func abandonIdempotent(tenant: String, key: String) throws {
    try write {
      try $0.query(
        "DELETE FROM idempotency_keys WHERE tenant = ? AND key = ? AND state = 'running'",
        [.text(tenant), .text(key)])
    }
  }

  public func abandonAllRunningIdempotent() throws {
    try write { try $0.query("DELETE FROM idempotency_keys WHERE state = 'running'") }
  }

  public func purgeIdempotent(createdBefore cutoff: Date) throws -> Int {
    try write { connection in
      try connection.query(
        "DELETE FROM idempotency_keys WHERE created_at <= ?", [.integer(Self.seconds(cutoff))])
      return connection.changes
    }
  }

  // Header names and values never hold CR or LF (HTTP forbids it), so lines are unambiguous.
  static func encodeHeaders(_ headers: [String: String]) -> String {
    headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\n" }.joined()
  }

  static func decodeHeaders(_ text: String) -> [String: String] {
    var headers: [String: String] = [:]
    for line in text.split(separator: "\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      let value = line[line.index(after: colon)...].drop { $0 == " " }
      headers[String(line[..<colon])] = String(value)
    }
    return headers
  }
}
