import Foundation

extension PostgresIndex {
  public func pinBlob(_ blob: BlobHash, now: Date, lease: TimeInterval) throws -> BlobPin {
    let end = Self.leaseEnd(now, lease)
    let pin = BlobPin(blob: blob, until: end)
    try query(.pinBlob, [.text(blob.hex), .text(pin.id), .integer(end)])
    return pin
  }

  public func unpinBlob(_ pin: BlobPin) throws {
    try query(.unpinBlob, [.text(pin.id)])
  }

  public func purgeBlobPins(expiredBy now: Date) throws -> Int {
    try query(.purgeBlobPins, [.integer(Self.seconds(now))]).affected
  }

  public func unreferencedBlobs(now: Date, limit: Int) throws -> [BlobHash] {
    try query(.unreferencedBlobs, [.integer(Self.seconds(now)), .integer(Int64(max(0, limit)))]).all
      .compactMap { $0.text(0).flatMap(BlobHash.init(hex:)) }
  }

  public func collectBlob(
    _ blob: BlobHash, now: Date, unknown: Bool, remove: (BlobHash) throws -> Bool
  ) throws -> Bool {
    let hash = PostgresValue.text(blob.hex)
    return try pool.withConnection { connection in
      try connection.transaction {
        // The row is the lock: pins and inserts take it too. A blob another node is
        // collecting is skipped, not waited for.
        if unknown { try connection.query(.ensureBlobRow, [hash]) }
        guard try connection.query(.lockBlob, [hash]).first != nil else { return false }
        // A statement after the lock: it sees every pin committed before the lock was taken,
        // and no pin can commit until this transaction ends.
        guard
          try connection.query(.blobStillNeeded, [hash, .integer(Self.seconds(now))]).first?.bool(0) == false
        else { return false }
        let removed = try remove(blob)
        try connection.query(.forgetBlob, [hash])
        return removed
      }
    }
  }
}
