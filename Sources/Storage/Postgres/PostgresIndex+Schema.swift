import Foundation

extension PostgresIndex {
  /// The schema version this code writes (rows of `attachd_schema`).
  public static var schemaVersion: Int { migrations.count }

  // Each entry moves the schema one version up; never edit a released one, append instead.
  // Times are Unix seconds (bigint), as the callers' clocks give them: the index compares
  // them with the `now` each call passes, never with the server's clock.
  static let migrations: [String] = [
    """
    CREATE TABLE tenants (
      id text PRIMARY KEY,
      retention_seconds double precision
    );
    CREATE TABLE attachments (
      id text PRIMARY KEY,
      tenant text NOT NULL,
      blob text NOT NULL,
      content_type text NOT NULL,
      width integer NOT NULL,
      height integer NOT NULL,
      bytes bigint NOT NULL,
      source_format text NOT NULL,
      source_width integer NOT NULL,
      source_height integer NOT NULL,
      source_bytes bigint NOT NULL,
      source_orientation integer NOT NULL,
      source_orientation_source text,
      source_colour_profile text,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX attachments_by_expiry ON attachments (expires_at);
    -- One row per blob an attachment refers to or an upload has pinned; refs counts the
    -- attachment rows. The row is also the lock that orders pins against collection.
    CREATE TABLE blobs (
      hash text PRIMARY KEY,
      refs bigint NOT NULL CHECK (refs >= 0),
      bytes bigint NOT NULL
    );
    CREATE INDEX blobs_unreferenced ON blobs (hash) WHERE refs = 0;
    CREATE TABLE blob_pins (
      id text PRIMARY KEY,
      hash text NOT NULL,
      expires_at bigint NOT NULL
    );
    CREATE INDEX blob_pins_by_hash ON blob_pins (hash, expires_at);
    CREATE INDEX blob_pins_by_expiry ON blob_pins (expires_at);
    CREATE TABLE idempotency_keys (
      tenant text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      state text NOT NULL CHECK (state IN ('running', 'done')),
      status integer,
      headers text,
      body bytea,
      created_at bigint NOT NULL,
      lease_expires_at bigint,
      PRIMARY KEY (tenant, key)
    );
    CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
    CREATE TABLE health (
      id integer PRIMARY KEY CHECK (id = 1),
      checked_at bigint NOT NULL
    );
    """,
    // 2: the end user who uploaded an attachment with a token (NULL: a tenant key), and usage
    // counters (files and bytes per token `jti`, per user and day) kept until they expire.
    """
    ALTER TABLE attachments ADD COLUMN owner text;
    CREATE TABLE usage_counters (
      tenant text NOT NULL,
      name text NOT NULL,
      files bigint NOT NULL,
      bytes bigint NOT NULL,
      expires_at bigint NOT NULL,
      PRIMARY KEY (tenant, name)
    );
    CREATE INDEX usage_counters_by_expiry ON usage_counters (expires_at);
    """,
    // 3: renditions of an attachment per model profile; each holds one reference in `blobs`.
    // No foreign key: deleting an attachment deletes its renditions in the same transaction,
    // which also drops their blob references (a cascade could not).
    """
    CREATE TABLE renditions (
      attachment text NOT NULL,
      profile text NOT NULL,
      blob text NOT NULL,
      width integer NOT NULL,
      height integer NOT NULL,
      bytes bigint NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (attachment, profile)
    );
    """,
    // 4: resumable uploads of `S3UploadStore`: state, offset and writer lease per upload (as
    // SQLite's `uploads` table), where its bytes are in the object store (the multipart upload,
    // its committed parts, the tail object past them), and the parts' ETags for completion.
    """
    CREATE TABLE uploads (
      id text PRIMARY KEY,
      tenant text NOT NULL,
      owner text,
      protocol text NOT NULL,
      metadata bytea NOT NULL,
      length bigint,
      max_length bigint NOT NULL,
      received bigint NOT NULL,
      state text NOT NULL CHECK (state IN ('receiving', 'completed', 'processed')),
      result_attachment text,
      result_status integer,
      result_headers text,
      result_body bytea,
      created_at bigint NOT NULL,
      expires_at bigint NOT NULL,
      lease_holder text,
      lease_expires_at_ms bigint,
      lease_wanted boolean NOT NULL DEFAULT false,
      part_size bigint NOT NULL,
      multipart_upload_id text,
      parts_count integer NOT NULL DEFAULT 0,
      parts_bytes bigint NOT NULL DEFAULT 0,
      tail_key text,
      assembled boolean NOT NULL DEFAULT false
    );
    CREATE INDEX uploads_by_expiry ON uploads (expires_at);
    CREATE TABLE upload_parts (
      upload_id text NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
      number integer NOT NULL,
      etag text NOT NULL,
      size bigint NOT NULL,
      PRIMARY KEY (upload_id, number)
    );
    """,
    // 5: the node that holds a running idempotency claim, so another node can tell when its
    // holder is gone (PostgresIndex+Liveness) instead of waiting out the claim's lease.
    "ALTER TABLE idempotency_keys ADD COLUMN node text;",
    // 6: what an attachment is (`image`, `video`) and the kind's own facts (JSON text).
    """
    ALTER TABLE attachments ADD COLUMN kind text NOT NULL DEFAULT 'image';
    ALTER TABLE attachments ADD COLUMN details text;
    """,
    // 7: video renditions as durable jobs (VideoJob), claimed FOR UPDATE SKIP LOCKED.
    """
    CREATE TABLE video_jobs (
      attachment text PRIMARY KEY,
      tenant text NOT NULL,
      state text NOT NULL,
      code text,
      holder text,
      lease_expires_at_ms bigint,
      attempts integer NOT NULL DEFAULT 0,
      created_at bigint NOT NULL
    );
    CREATE INDEX video_jobs_by_state ON video_jobs (state, created_at);
    """,
  ]

  // pg_advisory_xact_lock key for migrations: "attachd" in ASCII. Every node takes it before
  // reading the schema version, so two nodes starting at once migrate once, one after the other.
  private static let migrationLock: Int64 = 0x61_7474_6163_6864

  /// Brings the database to `schemaVersion` in one transaction under the advisory lock.
  static func migrate(_ connection: PostgresConnection, timeout: TimeInterval) throws {
    let wait = Duration.milliseconds(Int64(timeout * 1_000) + 1_000)
    try connection.transaction {
      try connection.query(.setLocalStatementTimeout, [.text(String(Int64(timeout * 1_000)))])
      try connection.query(.advisoryTransactionLock, [.integer(migrationLock)], timeout: wait)
      try connection.execute(
        """
        CREATE TABLE IF NOT EXISTS attachd_schema (
          version integer PRIMARY KEY,
          applied_at timestamptz NOT NULL DEFAULT now()
        )
        """)
      let current = try connection.query(.schemaVersion).first?.int(0) ?? 0
      guard current <= migrations.count else {
        throw StorageError(
          .database, "index schema \(current) is newer than this build (\(migrations.count))")
      }
      for version in current..<migrations.count {
        try connection.execute(migrations[version], timeout: wait)
        try connection.query(.schemaVersionInsert, [.integer(Int64(version + 1))])
      }
    }
  }
}
