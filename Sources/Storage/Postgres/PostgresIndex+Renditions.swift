import Foundation

// A rendition's insert holds its attachment row (FOR SHARE) until it commits: a deletion on any
// node either comes first (and the insert finds no attachment) or waits and deletes the
// rendition with it. Both take the attachment row before any blob row, so they cannot deadlock.
extension PostgresIndex {
  public func insertRendition(_ rendition: Rendition, now: Date) throws -> Rendition? {
    try pool.withConnection { connection in
      try connection.transaction {
        let id = PostgresValue.text(rendition.attachment)
        guard try connection.query(.lockLiveAttachment, [id, .integer(Self.seconds(now))]).first != nil else {
          return nil
        }
        let inserted = try connection.query(
          .insertRendition,
          [
            id, .text(rendition.profile), .text(rendition.blob.hex), .integer(Int64(rendition.width)),
            .integer(Int64(rendition.height)), .integer(Int64(rendition.bytes)),
            .integer(Self.seconds(rendition.createdAt)),
          ])
        guard inserted.first != nil else {
          // Another request made this profile first: keep its rendition.
          return try connection.query(.rendition, [id, .text(rendition.profile)]).first.map(Self.rendition)
        }
        try connection.query(
          .addBlobReference, [.text(rendition.blob.hex), .integer(Int64(rendition.bytes))])
        return rendition
      }
    }
  }

  public func renditions(ofAttachment id: String) throws -> [Rendition] {
    try query(.renditionsOf, [.text(id)]).all.map(Self.rendition)
  }

  private static func rendition(_ row: PostgresRow) throws -> Rendition {
    guard row.values.count == 7, let attachment = row.text(0), let profile = row.text(1),
      let blob = row.text(2).flatMap(BlobHash.init(hex:)), let created = row.integer(6)
    else { throw StorageError(.corrupt, "malformed rendition row") }
    return Rendition(
      attachment: attachment, profile: profile, blob: blob, width: row.int(3), height: row.int(4),
      bytes: row.int(5), createdAt: Date(timeIntervalSince1970: TimeInterval(created)))
  }
}
