import Foundation

// Holding the write lock while a blob is checked and removed orders that removal against every
// pin and insert.
extension SQLiteIndex {
  public func pinBlob(_ blob: BlobHash, now: Date, lease: TimeInterval) throws -> BlobPin {
    let end = Self.leaseEnd(now, lease)
    let pin = BlobPin(blob: blob, until: end)
    try write { connection in
      try connection.transaction {
        // The blob's row lets a sweep find the blob if the upload dies before its attachment row.
        try connection.query(
          "INSERT INTO blobs (hash, refs, bytes) VALUES (?, 0, 0) ON CONFLICT (hash) DO NOTHING",
          [.text(blob.hex)])
        try connection.query(
          "INSERT INTO blob_pins (id, hash, expires_at) VALUES (?, ?, ?)",
          [.text(pin.id), .text(blob.hex), .integer(end)])
      }
    }
    return pin
  }

  public func unpinBlob(_ pin: BlobPin) throws {
    try write { try $0.query("DELETE FROM blob_pins WHERE id = ?", [.text(pin.id)]) }
  }

  public func purgeBlobPins(expiredBy now: Date) throws -> Int {
    try write { connection in
      try connection.query("DELETE FROM blob_pins WHERE expires_at <= ?", [.integer(Self.seconds(now))])
      return connection.changes
    }
  }

  public func unreferencedBlobs(now: Date, limit: Int) throws -> [BlobHash] {
    try read { connection in
      try connection.query(
        """
        SELECT hash FROM blobs WHERE refs = 0
          AND NOT EXISTS (SELECT 1 FROM blob_pins WHERE blob_pins.hash = blobs.hash AND blob_pins.expires_at > ?)
        ORDER BY hash LIMIT ?
        """, [.integer(Self.seconds(now)), .integer(Int64(max(0, limit)))]
      ).compactMap { $0.first?.text.flatMap(BlobHash.init(hex:)) }
    }
  }

  public func collectBlob(
    _ blob: BlobHash, now: Date, unknown: Bool, remove: (BlobHash) throws -> Bool
  ) throws -> Bool {
    // In one IMMEDIATE transaction: the database's write lock (not only this instance's writer
    // mutex) is held from the check to the end, so a pin from another connection to the same
    // file waits too.
    try write { connection in
      try connection.transaction {
        // 1: still needed; 0: collectable; NULL: unknown.
        let needed = try connection.query(
          """
          SELECT (SELECT refs FROM blobs WHERE hash = ?1) > 0
            OR EXISTS (SELECT 1 FROM blob_pins WHERE hash = ?1 AND expires_at > ?2)
          """, [.text(blob.hex), .integer(Self.seconds(now))])
        let state = needed.first?.first?.integer
        guard state == 0 || (state == nil && unknown) else { return false }
        let removed = try remove(blob)
        try connection.query("DELETE FROM blob_pins WHERE hash = ?", [.text(blob.hex)])
        try connection.query("DELETE FROM blobs WHERE hash = ?", [.text(blob.hex)])
        return removed
      }
    }
  }
}
