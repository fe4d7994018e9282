import Foundation

// Video jobs on SQLite: one process per data directory, so a claim is a write transaction and a
// node's start requeues every running job (none can still be running).
extension SQLiteIndex {
  private static let jobColumns = "attachment, tenant, state, code, holder, attempts"

  public func enqueueVideoJob(attachment: String, tenant: String, now: Date) throws {
    try write { connection in
      _ = try connection.query(
        """
        INSERT INTO video_jobs (attachment, tenant, state, attempts, created_at) VALUES (?, ?, 'queued', 0, ?)
        ON CONFLICT (attachment) DO NOTHING
        """, [.text(attachment), .text(tenant), .integer(Self.milliseconds(now))])
    }
  }

  public func claimVideoJob(holder: String, now: Date, lease: TimeInterval) throws -> VideoJob? {
    let nowMS = Self.milliseconds(now)
    return try write { connection in
      try connection.transaction {
        guard
          let attachment = try connection.query(
            """
            SELECT attachment FROM video_jobs
            WHERE state = 'queued' OR (state = 'running' AND lease_expires_at_ms <= ?)
            ORDER BY created_at LIMIT 1
            """, [.integer(nowMS)]
          ).first?.first?.text
        else { return nil }
        return try connection.query(
          """
          UPDATE video_jobs SET state = 'running', holder = ?, lease_expires_at_ms = ?, attempts = attempts + 1
          WHERE attachment = ? RETURNING \(Self.jobColumns)
          """,
          [.text(holder), .integer(nowMS + Int64(lease * 1000)), .text(attachment)]
        ).first.map(Self.job)
      }
    }
  }

  public func renewVideoJob(attachment: String, holder: String, now: Date, lease: TimeInterval) throws -> Bool
  {
    try write { connection in
      _ = try connection.query(
        "UPDATE video_jobs SET lease_expires_at_ms = ? WHERE attachment = ? AND holder = ? AND state = 'running'",
        [.integer(Self.milliseconds(now) + Int64(lease * 1000)), .text(attachment), .text(holder)])
      return connection.changes == 1
    }
  }

  public func finishVideoJob(
    attachment: String, holder: String, state: VideoJob.State, code: String?, releasing: String
  ) throws -> Bool {
    try write { connection in
      try connection.transaction {
        _ = try connection.query(
          """
          UPDATE video_jobs SET state = ?, code = ?, holder = NULL, lease_expires_at_ms = NULL
          WHERE attachment = ? AND holder = ? AND state = 'running'
          """, [.text(state.rawValue), code.map(SQLValue.text) ?? .null, .text(attachment), .text(holder)])
        guard connection.changes == 1 else { return false }
        for row in try connection.query(
          "DELETE FROM renditions WHERE attachment = ? AND profile = ? RETURNING blob",
          [.text(attachment), .text(releasing)])
        {
          guard let blob = row.first?.text else { continue }
          _ = try connection.query("UPDATE blobs SET refs = refs - 1 WHERE hash = ?", [.text(blob)])
        }
        return true
      }
    }
  }

  public func videoJob(attachment: String) throws -> VideoJob? {
    try read { connection in
      try connection.query(
        "SELECT \(Self.jobColumns) FROM video_jobs WHERE attachment = ?", [.text(attachment)]
      ).first.map(Self.job)
    }
  }

  public func requeueVideoJobs(holderPrefix prefix: String) throws -> Int {
    try write { connection in
      _ = try connection.query(
        """
        UPDATE video_jobs SET state = 'queued', holder = NULL, lease_expires_at_ms = NULL
        WHERE state = 'running' AND substr(holder, 1, ?) = ?
        """, [.integer(Int64(prefix.utf8.count)), .text(prefix)])
      return connection.changes
    }
  }

  private static func job(_ row: [SQLValue]) throws -> VideoJob {
    guard row.count == 6, let attachment = row[0].text, let tenant = row[1].text,
      let state = row[2].text.flatMap(VideoJob.State.init(rawValue:))
    else { throw StorageError(.corrupt, "malformed video job row") }
    return VideoJob(
      attachment: attachment, tenant: tenant, state: state, code: row[3].text, holder: row[4].text,
      attempts: Int(row[5].integer ?? 0))
  }
}
