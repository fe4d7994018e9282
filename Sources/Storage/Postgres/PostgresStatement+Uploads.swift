import Foundation

// The `uploads` and `upload_parts` statements of `S3UploadStore` (schema version 3). Decisions
// (lease, length, completion) are made by `UploadRecord` in Swift on a row locked with
// `FOR UPDATE`; only the hot path, an offset commit, is a single conditional statement.
extension PostgresStatement {
  /// Every statement of this file (part of `all`).
  static let uploadStatements: [PostgresStatement] = [
    insertUpload, uploadRow, lockUploadRow, updateUploadRow, commitUploadOffset, setMultipartUpload,
    uploadParts, markUploadAssembled, deleteUpload, deleteExpiredUploads, clearUploadLeases,
    uploadsByID,
  ]

  static let uploadColumns = """
    id, tenant, owner, protocol, metadata, length, max_length, received, state, result_attachment, \
    result_status, result_headers, result_body, created_at, expires_at, lease_holder, lease_expires_at_ms, \
    lease_wanted, part_size, multipart_upload_id, parts_count, parts_bytes, tail_key, assembled
    """

  static let insertUpload = PostgresStatement(
    "insert_upload",
    """
    INSERT INTO uploads (\(uploadColumns))
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18::boolean, $19,
      $20, $21, $22, $23, $24::boolean)
    """)

  static let uploadRow = PostgresStatement(
    "upload_row",
    "SELECT \(uploadColumns) FROM uploads WHERE id = $1 AND tenant = $2 AND expires_at > $3")

  /// The row, locked until the transaction ends: every decision on an upload is made on it.
  static let lockUploadRow = PostgresStatement(
    "lock_upload_row",
    "SELECT \(uploadColumns) FROM uploads WHERE id = $1 AND tenant = $2 AND expires_at > $3 FOR UPDATE")

  static let updateUploadRow = PostgresStatement(
    "update_upload_row",
    """
    UPDATE uploads SET length = $2, max_length = $3, received = $4, state = $5, result_attachment = $6,
      result_status = $7, result_headers = $8, result_body = $9, expires_at = $10, lease_holder = $11,
      lease_expires_at_ms = $12, lease_wanted = $13::boolean, multipart_upload_id = $14, parts_count = $15,
      parts_bytes = $16, tail_key = $17, assembled = $18::boolean
    WHERE id = $1
    """)

  /// Moves a receiving upload's offset from $4 to $5 if lease $2 still holds it, with the parts
  /// uploaded meanwhile ($9–$11: numbers, ETags, sizes) and the new tail object $8, and renews
  /// the lease until $3, or releases it when $3 is NULL. One statement: atomic, one round trip.
  static let commitUploadOffset = PostgresStatement(
    "commit_upload_offset",
    """
    WITH moved AS (
      UPDATE uploads SET received = $5, parts_count = $6, parts_bytes = $7, tail_key = $8,
        lease_expires_at_ms = $3::bigint,
        lease_holder = CASE WHEN $3::bigint IS NULL THEN NULL ELSE lease_holder END,
        lease_wanted = CASE WHEN $3::bigint IS NULL THEN false ELSE lease_wanted END
      WHERE id = $1 AND lease_holder = $2 AND received = $4 AND state = 'receiving'
      RETURNING id, lease_wanted
    ), added AS (
      INSERT INTO upload_parts (upload_id, number, etag, size)
      SELECT moved.id, part.number, part.etag, part.size
      FROM moved, unnest($9::integer[], $10::text[], $11::bigint[]) AS part (number, etag, size)
      ON CONFLICT (upload_id, number) DO UPDATE SET etag = excluded.etag, size = excluded.size
    )
    SELECT lease_wanted FROM moved
    """)

  /// Records the multipart upload a writer under lease $2 started, unless one is recorded.
  static let setMultipartUpload = PostgresStatement(
    "set_multipart_upload",
    """
    UPDATE uploads SET multipart_upload_id = $3
    WHERE id = $1 AND lease_holder = $2 AND state = 'receiving' AND multipart_upload_id IS NULL
    RETURNING 1
    """)

  static let uploadParts = PostgresStatement(
    "upload_parts", "SELECT number, etag, size FROM upload_parts WHERE upload_id = $1 ORDER BY number")

  /// The parts are one object now: recorded by the holder $2 of the processing claim.
  static let markUploadAssembled = PostgresStatement(
    "mark_upload_assembled",
    "UPDATE uploads SET assembled = true WHERE id = $1 AND lease_holder = $2 AND state = 'completed' RETURNING 1"
  )

  static let deleteUpload = PostgresStatement(
    "delete_upload",
    "DELETE FROM uploads WHERE id = $1 AND tenant = $2 RETURNING \(uploadColumns)")

  static let deleteExpiredUploads = deletingExpired(
    "delete_expired_uploads", from: "uploads", returning: uploadColumns)

  /// Releases every lease whose holder token starts with $1 (a node's own, after its restart).
  static let clearUploadLeases = PostgresStatement(
    "clear_upload_leases",
    """
    UPDATE uploads SET lease_holder = NULL, lease_expires_at_ms = NULL, lease_wanted = false
    WHERE substr(lease_holder, 1, length($1)) = $1
    """)

  /// What the objects of the uploads $1 may be (for the orphan sweep): live rows only.
  static let uploadsByID = PostgresStatement(
    "uploads_by_id",
    "SELECT id, multipart_upload_id, tail_key, assembled FROM uploads WHERE id = ANY($1::text[])")
}
