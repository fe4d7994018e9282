import Foundation

extension SQLiteIndex {
  public func reserveUsage(
    _ key: UsageKey, adding amount: UsageAmount, limits: UsageLimits, expiresAt: Date, now: Date
  ) throws -> UsageReservation {
    let nowSeconds = Self.seconds(now)
    return try write { connection in
      // Read, check and add in one IMMEDIATE transaction: no second writer can slip between.
      try connection.transaction {
        let rows = try connection.query(
          "SELECT files, bytes, expires_at FROM usage_counters WHERE tenant = ? AND name = ?",
          [.text(key.tenant), .text(key.name)])
        var current = UsageAmount.zero
        var expiry = Self.seconds(expiresAt)
        if let row = rows.first, (row[2].integer ?? 0) > nowSeconds {
          current = UsageAmount(files: Int(row[0].integer ?? 0), bytes: Int(row[1].integer ?? 0))
          expiry = row[2].integer ?? expiry
        }
        let outcome = limits.reserve(amount, on: current)
        guard case .reserved(let total) = outcome else { return outcome }
        try connection.query(
          """
          INSERT OR REPLACE INTO usage_counters (tenant, name, files, bytes, expires_at) VALUES (?, ?, ?, ?, ?)
          """,
          [
            .text(key.tenant), .text(key.name), .integer(Int64(total.files)), .integer(Int64(total.bytes)),
            .integer(expiry),
          ])
        return outcome
      }
    }
  }

  public func releaseUsage(_ key: UsageKey, amount: UsageAmount) throws {
    try write {
      try $0.query(
        "UPDATE usage_counters SET files = max(0, files - ?), bytes = max(0, bytes - ?) WHERE tenant = ? AND name = ?",
        [.integer(Int64(amount.files)), .integer(Int64(amount.bytes)), .text(key.tenant), .text(key.name)])
    }
  }

  public func usage(_ key: UsageKey, now: Date) throws -> UsageAmount? {
    let rows = try read {
      try $0.query(
        "SELECT files, bytes FROM usage_counters WHERE tenant = ? AND name = ? AND expires_at > ?",
        [.text(key.tenant), .text(key.name), .integer(Self.seconds(now))])
    }
    return rows.first.map { UsageAmount(files: Int($0[0].integer ?? 0), bytes: Int($0[1].integer ?? 0)) }
  }

  public func purgeUsage(expiredBefore cutoff: Date) throws -> Int {
    try write { connection in
      try connection.query(
        "DELETE FROM usage_counters WHERE expires_at <= ?", [.integer(Self.seconds(cutoff))])
      return connection.changes
    }
  }
}
