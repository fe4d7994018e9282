import Foundation

// Video jobs on PostgreSQL: any node's worker claims the oldest queued job, or a running one
// whose lease has lapsed, with FOR UPDATE SKIP LOCKED, so two workers never take the same job
// and neither waits for the other.
extension PostgresIndex {
  static func milliseconds(_ date: Date) -> Int64 {
    Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
  }

  public func enqueueVideoJob(attachment: String, tenant: String, now: Date) throws {
    try query(.enqueueVideoJob, [.text(attachment), .text(tenant), .integer(Self.milliseconds(now))])
  }

  public func claimVideoJob(holder: String, now: Date, lease: TimeInterval) throws -> VideoJob? {
    let nowMS = Self.milliseconds(now)
    return try query(.claimVideoJob, [.text(holder), .integer(nowMS + Int64(lease * 1000)), .integer(nowMS)])
      .first.map(Self.job)
  }

  public func renewVideoJob(attachment: String, holder: String, now: Date, lease: TimeInterval) throws -> Bool
  {
    try query(
      .renewVideoJob,
      [.text(attachment), .text(holder), .integer(Self.milliseconds(now) + Int64(lease * 1000))]
    ).first != nil
  }

  public func finishVideoJob(
    attachment: String, holder: String, state: VideoJob.State, code: String?, releasing: String
  ) throws -> Bool {
    try pool.withConnection { connection in
      try connection.transaction {
        let finished = try connection.query(
          .finishVideoJob,
          [.text(attachment), .text(holder), .text(state.rawValue), code.map(PostgresValue.text) ?? .null])
        guard finished.first != nil else { return false }
        let blobs = try connection.query(.deleteRendition, [.text(attachment), .text(releasing)]).all
          .compactMap {
            $0.text(0)
          }
        if !blobs.isEmpty {
          let array = PostgresValue.text("{" + blobs.sorted().joined(separator: ",") + "}")
          let counts = PostgresValue.text("{" + blobs.map { _ in "1" }.joined(separator: ",") + "}")
          try connection.query(.lockBlobsInOrder, [array])
          try connection.query(.releaseBlobReferences, [array, counts])
        }
        return true
      }
    }
  }

  public func videoJob(attachment: String) throws -> VideoJob? {
    try query(.videoJob, [.text(attachment)]).first.map(Self.job)
  }

  public func requeueVideoJobs(holderPrefix prefix: String) throws -> Int {
    try query(.requeueVideoJobs, [.text(prefix)]).all.count
  }

  private static func job(_ row: PostgresRow) throws -> VideoJob {
    guard row.values.count == 6, let attachment = row.text(0), let tenant = row.text(1),
      let state = row.text(2).flatMap(VideoJob.State.init(rawValue:))
    else { throw StorageError(.corrupt, "malformed video job row") }
    return VideoJob(
      attachment: attachment, tenant: tenant, state: state, code: row.text(3), holder: row.text(4),
      attempts: row.int(5))
  }
}

extension PostgresStatement {
  static let videoJobStatements: [PostgresStatement] = [
    enqueueVideoJob, claimVideoJob, renewVideoJob, finishVideoJob, deleteRendition, videoJob,
    requeueVideoJobs,
  ]

  static let videoJobColumns = "attachment, tenant, state, code, holder, attempts"

  static let enqueueVideoJob = PostgresStatement(
    "enqueue_video_job",
    """
    INSERT INTO video_jobs (attachment, tenant, state, attempts, created_at) VALUES ($1, $2, 'queued', 0, $3)
    ON CONFLICT (attachment) DO NOTHING
    """)
  static let claimVideoJob = PostgresStatement(
    "claim_video_job",
    """
    UPDATE video_jobs SET state = 'running', holder = $1, lease_expires_at_ms = $2, attempts = attempts + 1
    WHERE attachment = (
      SELECT attachment FROM video_jobs
      WHERE state = 'queued' OR (state = 'running' AND lease_expires_at_ms <= $3)
      ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING \(videoJobColumns)
    """)
  static let renewVideoJob = PostgresStatement(
    "renew_video_job",
    """
    UPDATE video_jobs SET lease_expires_at_ms = $3 WHERE attachment = $1 AND holder = $2 AND state = 'running'
    RETURNING attachment
    """)
  static let finishVideoJob = PostgresStatement(
    "finish_video_job",
    """
    UPDATE video_jobs SET state = $3, code = $4, holder = NULL, lease_expires_at_ms = NULL
    WHERE attachment = $1 AND holder = $2 AND state = 'running' RETURNING attachment
    """)
  static let deleteRendition = PostgresStatement(
    "delete_rendition", "DELETE FROM renditions WHERE attachment = $1 AND profile = $2 RETURNING blob")
  static let videoJob = PostgresStatement(
    "video_job", "SELECT \(videoJobColumns) FROM video_jobs WHERE attachment = $1")
  static let requeueVideoJobs = PostgresStatement(
    "requeue_video_jobs",
    """
    UPDATE video_jobs SET state = 'queued', holder = NULL, lease_expires_at_ms = NULL
    WHERE state = 'running' AND starts_with(holder, $1) RETURNING attachment
    """)
}
