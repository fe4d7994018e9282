import Foundation

// Every statement PostgresIndex runs, in one registry: each is prepared once per connection on
// first use, and values only ever reach the server as bound parameters ($1, $2, …). A new
// table's statements are added here and to `all`.
extension PostgresStatement {
  /// Every registered statement (a test prepares each against the current schema).
  static let all: [PostgresStatement] =
    [
      setLocalStatementTimeout, advisoryTransactionLock, schemaVersion, schemaVersionInsert,
      insertAttachment, attachment, tenantOfAttachment, deleteAttachment, deleteExpiredAttachments,
      lockBlobsInOrder, releaseBlobReferences, referenceCount, statistics,
      setRetention, clearRetention, retention, checkWritable,
      claimIdempotent, readIdempotent, completeIdempotent, abandonIdempotent, purgeIdempotent,
      pinBlob, unpinBlob, purgeBlobPins, unreferencedBlobs, ensureBlobRow, lockBlob, blobStillNeeded,
      forgetBlob, ensureUsageCounter, lockUsageCounter, setUsageCounter, releaseUsage, usage, purgeUsage,
      deleteRenditionsOf, lockLiveAttachment, insertRendition, addBlobReference, rendition, renditionsOf,
    ] + uploadStatements + videoJobStatements

  // MARK: - Schema

  static let setLocalStatementTimeout = PostgresStatement(
    "set_local_statement_timeout", "SELECT set_config('statement_timeout', $1, true)")
  static let advisoryTransactionLock = PostgresStatement(
    "advisory_transaction_lock", "SELECT pg_advisory_xact_lock($1::bigint)")
  static let schemaVersion = PostgresStatement(
    "schema_version", "SELECT coalesce(max(version), 0) FROM attachd_schema")
  static let schemaVersionInsert = PostgresStatement(
    "schema_version_insert", "INSERT INTO attachd_schema (version) VALUES ($1::integer)")

  // MARK: - Attachments

  static let attachmentColumns = """
    id, tenant, blob, content_type, width, height, bytes, source_format, source_width, source_height, \
    source_bytes, source_orientation, source_orientation_source, source_colour_profile, created_at, expires_at, \
    owner, kind, details
    """

  /// The row and its blob's reference in one statement (one round trip, atomic).
  static let insertAttachment = PostgresStatement(
    "insert_attachment",
    """
    WITH added AS (
      INSERT INTO attachments (\(attachmentColumns))
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
      RETURNING blob, bytes
    )
    INSERT INTO blobs (hash, refs, bytes) SELECT blob, 1, bytes FROM added
    ON CONFLICT (hash) DO UPDATE SET refs = blobs.refs + 1, bytes = excluded.bytes
    """)

  static let attachment = PostgresStatement(
    "attachment",
    "SELECT \(attachmentColumns) FROM attachments WHERE id = $1 AND tenant = $2 AND expires_at > $3")

  static let tenantOfAttachment = PostgresStatement(
    "tenant_of_attachment", "SELECT tenant FROM attachments WHERE id = $1 AND expires_at > $2")

  /// The row only: its blob references (and its renditions') are released by the caller in
  /// the same transaction, blob rows locked in hash order.
  static let deleteAttachment = PostgresStatement(
    "delete_attachment",
    "DELETE FROM attachments WHERE id = $1 AND tenant = $2 RETURNING \(attachmentColumns)")

  static let deleteExpiredAttachments = deletingExpired(
    "delete_expired_attachments", from: "attachments", returning: attachmentColumns)

  /// Claims up to $2 rows of `table` expired at $1 that no other node is deleting (SKIP LOCKED),
  /// deletes them and returns their `columns` (a list as in `attachmentColumns`).
  static func deletingExpired(_ name: String, from table: String, returning columns: String)
    -> PostgresStatement
  {
    let qualified = columns.split(separator: ",")
      .map { table + "." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
    return PostgresStatement(
      name,
      """
      WITH doomed AS (
        SELECT id FROM \(table) WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
      )
      DELETE FROM \(table) USING doomed WHERE \(table).id = doomed.id
      RETURNING \(qualified)
      """)
  }

  /// Locks blob rows in hash order, so two sweepers releasing overlapping blobs cannot deadlock.
  static let lockBlobsInOrder = PostgresStatement(
    "lock_blobs_in_order", "SELECT hash FROM blobs WHERE hash = ANY($1::text[]) ORDER BY hash FOR UPDATE")

  static let releaseBlobReferences = PostgresStatement(
    "release_blob_references",
    """
    UPDATE blobs SET refs = blobs.refs - released.n
    FROM unnest($1::text[], $2::bigint[]) AS released (hash, n)
    WHERE blobs.hash = released.hash
    """)

  static let referenceCount = PostgresStatement(
    "reference_count", "SELECT refs FROM blobs WHERE hash = $1")

  static let statistics = PostgresStatement(
    "statistics",
    """
    SELECT (SELECT count(*) FROM attachments), (SELECT coalesce(sum(bytes), 0) FROM attachments),
      (SELECT count(*) FROM blobs WHERE refs > 0), (SELECT coalesce(sum(bytes), 0) FROM blobs WHERE refs > 0),
      (SELECT count(*) FROM idempotency_keys)
    """)

  // MARK: - Tenants and health

  static let setRetention = PostgresStatement(
    "set_retention",
    """
    INSERT INTO tenants (id, retention_seconds) VALUES ($1, $2::double precision)
    ON CONFLICT (id) DO UPDATE SET retention_seconds = excluded.retention_seconds
    """)
  static let clearRetention = PostgresStatement("clear_retention", "DELETE FROM tenants WHERE id = $1")
  static let retention = PostgresStatement(
    "retention", "SELECT retention_seconds FROM tenants WHERE id = $1")
  static let checkWritable = PostgresStatement(
    "check_writable",
    """
    INSERT INTO health (id, checked_at) VALUES (1, $1)
    ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at
    """)

  // MARK: - Idempotency

  /// Inserts a running claim, or takes over a key whose answer outlived its lifetime ($6 s
  /// after $4) or whose running claim's lease passed; returns a row only when it claimed.
  static let claimIdempotent = PostgresStatement(
    "claim_idempotent",
    """
    INSERT INTO idempotency_keys AS held (tenant, key, fingerprint, state, created_at, lease_expires_at, node)
    VALUES ($1, $2, $3, 'running', $4, $5, $7)
    ON CONFLICT (tenant, key) DO UPDATE SET
      fingerprint = excluded.fingerprint, state = 'running', status = NULL, headers = NULL, body = NULL,
      created_at = excluded.created_at, lease_expires_at = excluded.lease_expires_at, node = excluded.node
    WHERE ($4 - held.created_at)::double precision >= $6::double precision
      OR (held.state = 'running' AND coalesce(held.lease_expires_at, 0) <= $4)
      OR (held.state = 'running' AND held.node IS NOT DISTINCT FROM $8 AND $8 IS NOT NULL)
    RETURNING 1
    """)
  static let readIdempotent = PostgresStatement(
    "read_idempotent",
    "SELECT fingerprint, state, status, headers, body, node FROM idempotency_keys WHERE tenant = $1 AND key = $2"
  )
  static let completeIdempotent = PostgresStatement(
    "complete_idempotent",
    """
    UPDATE idempotency_keys SET state = 'done', status = $3, headers = $4, body = $5, lease_expires_at = NULL
    WHERE tenant = $1 AND key = $2 AND state = 'running'
    """)
  static let abandonIdempotent = PostgresStatement(
    "abandon_idempotent", "DELETE FROM idempotency_keys WHERE tenant = $1 AND key = $2 AND state = 'running'")
  static let purgeIdempotent = PostgresStatement(
    "purge_idempotent",
    """
    WITH doomed AS (
      SELECT tenant, key FROM idempotency_keys WHERE created_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED
    )
    DELETE FROM idempotency_keys USING doomed
    WHERE idempotency_keys.tenant = doomed.tenant AND idempotency_keys.key = doomed.key
    """)

  // MARK: - Blobs

  /// Creates or locks the blob's row, then adds the pin: a collection holding the row lock
  /// finishes first (and the upload writes the blob again), or sees the pin.
  static let pinBlob = PostgresStatement(
    "pin_blob",
    """
    WITH held AS (
      INSERT INTO blobs (hash, refs, bytes) VALUES ($1, 0, 0)
      ON CONFLICT (hash) DO UPDATE SET refs = blobs.refs
      RETURNING hash
    )
    INSERT INTO blob_pins (id, hash, expires_at) SELECT $2, hash, $3 FROM held
    """)
  static let unpinBlob = PostgresStatement("unpin_blob", "DELETE FROM blob_pins WHERE id = $1")
  static let purgeBlobPins = PostgresStatement(
    "purge_blob_pins", "DELETE FROM blob_pins WHERE expires_at <= $1")
  static let unreferencedBlobs = PostgresStatement(
    "unreferenced_blobs",
    """
    SELECT hash FROM blobs WHERE refs = 0
      AND NOT EXISTS (SELECT 1 FROM blob_pins WHERE blob_pins.hash = blobs.hash AND blob_pins.expires_at > $1)
    ORDER BY hash LIMIT $2
    """)
  /// A blob file with no row (a crash before its row, or an older store) gets one to lock.
  static let ensureBlobRow = PostgresStatement(
    "ensure_blob_row", "INSERT INTO blobs (hash, refs, bytes) VALUES ($1, 0, 0) ON CONFLICT (hash) DO NOTHING"
  )
  static let lockBlob = PostgresStatement(
    "lock_blob", "SELECT refs FROM blobs WHERE hash = $1 FOR UPDATE SKIP LOCKED")
  /// Run after `lockBlob` in the same transaction: every pin committed before the lock is visible.
  static let blobStillNeeded = PostgresStatement(
    "blob_still_needed",
    """
    SELECT refs > 0 OR EXISTS (SELECT 1 FROM blob_pins WHERE hash = $1 AND expires_at > $2)
    FROM blobs WHERE hash = $1
    """)
  static let forgetBlob = PostgresStatement(
    "forget_blob",
    "WITH unpinned AS (DELETE FROM blob_pins WHERE hash = $1) DELETE FROM blobs WHERE hash = $1")

  // MARK: - Usage counters

  /// Makes sure the counter's row exists (zero, with the given expiry), so the next statement
  /// has a row to lock even when two nodes reserve a new counter at once.
  static let ensureUsageCounter = PostgresStatement(
    "ensure_usage_counter",
    """
    INSERT INTO usage_counters (tenant, name, files, bytes, expires_at) VALUES ($1, $2, 0, 0, $3)
    ON CONFLICT (tenant, name) DO NOTHING
    """)
  static let lockUsageCounter = PostgresStatement(
    "lock_usage_counter",
    "SELECT files, bytes, expires_at FROM usage_counters WHERE tenant = $1 AND name = $2 FOR UPDATE")
  static let setUsageCounter = PostgresStatement(
    "set_usage_counter",
    "UPDATE usage_counters SET files = $3, bytes = $4, expires_at = $5 WHERE tenant = $1 AND name = $2")
  static let releaseUsage = PostgresStatement(
    "release_usage",
    """
    UPDATE usage_counters SET files = greatest(0, files - $3), bytes = greatest(0, bytes - $4)
    WHERE tenant = $1 AND name = $2
    """)
  static let usage = PostgresStatement(
    "usage", "SELECT files, bytes FROM usage_counters WHERE tenant = $1 AND name = $2 AND expires_at > $3")
  static let purgeUsage = PostgresStatement(
    "purge_usage", "DELETE FROM usage_counters WHERE expires_at <= $1")
}

// MARK: - Renditions

extension PostgresStatement {
  static let renditionColumns = "attachment, profile, blob, width, height, bytes, created_at"

  /// The renditions of deleted attachments ($1: their ids), with the blobs whose references go.
  static let deleteRenditionsOf = PostgresStatement(
    "delete_renditions_of",
    """
    WITH jobs AS (DELETE FROM video_jobs WHERE attachment = ANY($1::text[]))
    DELETE FROM renditions WHERE attachment = ANY($1::text[]) RETURNING blob
    """)
  /// Holds the live attachment against deletion until the rendition's insert commits.
  static let lockLiveAttachment = PostgresStatement(
    "lock_live_attachment", "SELECT 1 FROM attachments WHERE id = $1 AND expires_at > $2 FOR SHARE")
  static let insertRendition = PostgresStatement(
    "insert_rendition",
    """
    INSERT INTO renditions (\(renditionColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (attachment, profile) DO NOTHING RETURNING 1
    """)
  static let addBlobReference = PostgresStatement(
    "add_blob_reference",
    """
    INSERT INTO blobs (hash, refs, bytes) VALUES ($1, 1, $2)
    ON CONFLICT (hash) DO UPDATE SET refs = blobs.refs + 1, bytes = excluded.bytes
    """)
  static let rendition = PostgresStatement(
    "rendition", "SELECT \(renditionColumns) FROM renditions WHERE attachment = $1 AND profile = $2")
  static let renditionsOf = PostgresStatement(
    "renditions_of", "SELECT \(renditionColumns) FROM renditions WHERE attachment = $1 ORDER BY profile")
}
