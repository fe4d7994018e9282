import Foundation

extension PostgresIndex {
  public func reserveUsage(
    _ key: UsageKey, adding amount: UsageAmount, limits: UsageLimits, expiresAt: Date, now: Date
  ) throws -> UsageReservation {
    let nowSeconds = Self.seconds(now)
    return try pool.withConnection { connection in
      // Ensure the row, then lock it: of several nodes reserving on one counter, each waits for
      // the one before and reads its total; none can add past a limit between read and write.
      try connection.transaction {
        let names: [PostgresValue] = [.text(key.tenant), .text(key.name)]
        try connection.query(.ensureUsageCounter, names + [.integer(Self.seconds(expiresAt))])
        guard let row = try connection.query(.lockUsageCounter, names).first else {
          throw StorageError(.database, "usage counter vanished while locked")
        }
        var current = UsageAmount.zero
        var expiry = Self.seconds(expiresAt)
        // An expired counter starts again from zero; a live one keeps its expiry.
        if let stored = row.integer(2), stored > nowSeconds {
          current = UsageAmount(files: row.int(0), bytes: row.int(1))
          expiry = stored
        }
        let outcome = limits.reserve(amount, on: current)
        guard case .reserved(let total) = outcome else { return outcome }
        try connection.query(
          .setUsageCounter,
          names + [.integer(Int64(total.files)), .integer(Int64(total.bytes)), .integer(expiry)])
        return outcome
      }
    }
  }

  public func releaseUsage(_ key: UsageKey, amount: UsageAmount) throws {
    try query(
      .releaseUsage,
      [.text(key.tenant), .text(key.name), .integer(Int64(amount.files)), .integer(Int64(amount.bytes))])
  }

  public func usage(_ key: UsageKey, now: Date) throws -> UsageAmount? {
    try query(.usage, [.text(key.tenant), .text(key.name), .integer(Self.seconds(now))]).first.map {
      UsageAmount(files: $0.int(0), bytes: $0.int(1))
    }
  }

  public func purgeUsage(expiredBefore cutoff: Date) throws -> Int {
    try query(.purgeUsage, [.integer(Self.seconds(cutoff))]).affected
  }
}
