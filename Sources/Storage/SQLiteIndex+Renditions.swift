import Foundation

// The write lock of one IMMEDIATE transaction orders a rendition's insert against the
// attachment's deletion, on this connection and on any other opened on the same file.
extension SQLiteIndex {
  private static let renditionColumns = "attachment, profile, blob, width, height, bytes, created_at"

  public func insertRendition(_ rendition: Rendition, now: Date) throws -> Rendition? {
    try write { connection in
      try connection.transaction {
        let live = try connection.query(
          "SELECT 1 FROM attachments WHERE id = ? AND expires_at > ?",
          [.text(rendition.attachment), .integer(Self.seconds(now))])
        guard !live.isEmpty else { return nil }
        let existing = try connection.query(
          "SELECT \(Self.renditionColumns) FROM renditions WHERE attachment = ? AND profile = ?",
          [.text(rendition.attachment), .text(rendition.profile)])
        if let row = existing.first { return try Self.rendition(row) }
        try connection.query(
          "INSERT INTO renditions (\(Self.renditionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)",
          [
            .text(rendition.attachment), .text(rendition.profile), .text(rendition.blob.hex),
            .integer(Int64(rendition.width)), .integer(Int64(rendition.height)),
            .integer(Int64(rendition.bytes)), .integer(Self.seconds(rendition.createdAt)),
          ])
        try connection.query(
          """
          INSERT INTO blobs (hash, refs, bytes) VALUES (?, 1, ?)
          ON CONFLICT (hash) DO UPDATE SET refs = refs + 1, bytes = excluded.bytes
          """, [.text(rendition.blob.hex), .integer(Int64(rendition.bytes))])
        return rendition
      }
    }
  }

  public func renditions(ofAttachment id: String) throws -> [Rendition] {
    try read { connection in
      try connection.query(
        "SELECT \(Self.renditionColumns) FROM renditions WHERE attachment = ? ORDER BY profile", [.text(id)]
      ).map(Self.rendition)
    }
  }

  private static func rendition(_ row: [SQLValue]) throws -> Rendition {
    guard row.count == 7, let attachment = row[0].text, let profile = row[1].text,
      let blob = row[2].text.flatMap(BlobHash.init(hex:))
    else { throw StorageError(.corrupt, "malformed rendition row") }
    return Rendition(
      attachment: attachment, profile: profile, blob: blob, width: Int(row[3].integer ?? 0),
      height: Int(row[4].integer ?? 0), bytes: Int(row[5].integer ?? 0), createdAt: date(row[6]))
  }
}
