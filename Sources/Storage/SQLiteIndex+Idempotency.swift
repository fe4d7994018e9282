import Foundation

extension SQLiteIndex {
  public func beginIdempotent(
    tenant: String, key: String, fingerprint: String, now: Date, lifetime: TimeInterval, lease: TimeInterval
  ) throws -> IdempotencyBegin {
    let nowSeconds = Self.seconds(now)
    return try write { connection in
      // Read and claim in one IMMEDIATE transaction: two requests with one key cannot both start.
      try connection.transaction {
        let rows = try connection.query(
          """
          SELECT fingerprint, state, status, headers, body, created_at, lease_expires_at
          FROM idempotency_keys WHERE tenant = ? AND key = ?
          """,
          [.text(tenant), .text(key)])
        // A running claim without a lease predates leases: its process is gone, so it is stale.
        if let row = rows.first, Double(nowSeconds - (row[5].integer ?? 0)) < lifetime,
          row[1].text == "done" || (row[6].integer ?? 0) > nowSeconds
        {
          guard row[0].text == fingerprint else { return .mismatch }
          guard row[1].text == "done" else { return .inProgress }
          return .completed(
            StoredResponse(
              status: Int(row[2].integer ?? 0), headers: StoredHeaders.decode(row[3].text ?? ""),
              body: row[4].bytes ?? []))
        }
        try connection.query(
          """
          INSERT OR REPLACE INTO idempotency_keys (tenant, key, fingerprint, state, created_at, lease_expires_at)
          VALUES (?, ?, ?, 'running', ?, ?)
          """,
          [
            .text(tenant), .text(key), .text(fingerprint), .integer(nowSeconds),
            .integer(Self.leaseEnd(now, lease)),
          ])
        return .started
      }
    }
  }

  public func completeIdempotent(tenant: String, key: String, response: StoredResponse) throws {
    try write { connection in
      try connection.query(
        """
        UPDATE idempotency_keys SET state = 'done', status = ?, headers = ?, body = ?, lease_expires_at = NULL
        WHERE tenant = ? AND key = ? AND state = 'running'
        """,
        [
          .integer(Int64(response.status)), .text(StoredHeaders.encode(response.headers)),
          .blob(response.body),
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

  /// Releases every running claim. `AttachmentStore.embedded` calls it at start-up: the
  /// embedded index belongs to one process, so no request of an earlier one can still be
  /// running, and a retry need not wait for the dead claim's lease. (Never right for an index
  /// that several nodes share: another node's request may be running.)
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
}
