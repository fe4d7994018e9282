import Foundation
import Synchronization

/// The attachment index in one SQLite file, in WAL mode, for one attachd process.
///
/// Threads: one writer connection behind a mutex (SQLite allows one writer at a time anyway;
/// every write is a single short statement or transaction), and a pool of reader connections,
/// one per concurrently reading thread, that WAL lets read while the writer commits.
///
/// Durability: `synchronous = FULL` by default, so a committed row (an acknowledged upload)
/// survives power loss as well as `kill -9`; `.normal` survives a process crash but may lose
/// the last commits on power loss, for a cheaper commit. Blobs are always fsynced.
public final class SQLiteIndex: AttachmentIndex {
  /// Settings for opening an index.
  public struct Configuration: Sendable {
    /// How hard a commit reaches the disk.
    public enum Synchronous: String, Sendable {
      /// Each commit fsyncs the WAL: survives power loss.
      case full = "FULL"
      /// WAL fsynced at checkpoints only: survives a process crash, not power loss.
      case normal = "NORMAL"
    }

    /// The database file.
    public var path: String
    /// Commit durability; `.full` by default.
    public var synchronous: Synchronous
    /// How long a statement waits for a lock before failing with `.busy`, in milliseconds.
    public var busyTimeoutMilliseconds: Int
    /// Reader connections kept open while idle.
    public var idleReaders: Int

    /// Defaults for the index at `path`.
    public init(
      path: String, synchronous: Synchronous = .full, busyTimeoutMilliseconds: Int = 5000,
      idleReaders: Int = 8
    ) {
      self.path = path
      self.synchronous = synchronous
      self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
      self.idleReaders = idleReaders
    }

    /// Throws `.invalidArgument` for settings that cannot work.
    public func validate() throws {
      guard !path.isEmpty else { throw StorageError(.invalidArgument, "index path is empty") }
      guard busyTimeoutMilliseconds >= 0, idleReaders >= 0 else {
        throw StorageError(.invalidArgument, "negative busy timeout or reader count")
      }
    }
  }

  /// The settings the index was opened with.
  public let configuration: Configuration
  private let writer: Mutex<SQLiteConnection>
  private let readers: Mutex<[SQLiteConnection]>

  /// Opens (creating and migrating if needed) the index at `configuration.path`.
  public init(configuration: Configuration) throws {
    try configuration.validate()
    self.configuration = configuration
    let connection = try SQLiteConnection(
      path: configuration.path, readOnly: false,
      busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
    let mode = try connection.query("PRAGMA journal_mode = WAL").first?.first?.text
    guard mode?.lowercased() == "wal" else {
      throw StorageError(.database, "journal_mode WAL refused (\(mode ?? "nil")) for \(configuration.path)")
    }
    try connection.execute("PRAGMA synchronous = \(configuration.synchronous.rawValue)")
    try Self.migrate(connection)
    self.writer = Mutex(connection)
    self.readers = Mutex([])
  }

  /// Opens the index at `path` with default settings.
  public convenience init(path: String) throws {
    try self.init(configuration: Configuration(path: path))
  }

  /// The schema version this code writes (`PRAGMA user_version`).
  public static let schemaVersion = migrations.count

  // Each entry moves the schema one version up; never edit a released one, append instead.
  static let migrations: [String] = [
    """
    CREATE TABLE tenants (
      id TEXT PRIMARY KEY NOT NULL,
      retention_seconds REAL
    );
    CREATE TABLE attachments (
      id TEXT PRIMARY KEY NOT NULL,
      tenant TEXT NOT NULL,
      blob TEXT NOT NULL,
      content_type TEXT NOT NULL,
      width INTEGER NOT NULL,
      height INTEGER NOT NULL,
      bytes INTEGER NOT NULL,
      source_format TEXT NOT NULL,
      source_width INTEGER NOT NULL,
      source_height INTEGER NOT NULL,
      source_bytes INTEGER NOT NULL,
      source_orientation INTEGER NOT NULL,
      source_orientation_source TEXT,
      source_colour_profile TEXT,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    );
    CREATE INDEX attachments_by_blob ON attachments (blob);
    CREATE INDEX attachments_by_expiry ON attachments (expires_at);
    CREATE TABLE idempotency_keys (
      tenant TEXT NOT NULL,
      key TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('running', 'done')),
      status INTEGER,
      headers TEXT,
      body BLOB,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant, key)
    ) WITHOUT ROWID;
    CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);
    CREATE TABLE health (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      checked_at INTEGER NOT NULL
    );
    """,
    // 2: the end user who uploaded an attachment with a token (NULL: a tenant key), and
    // usage counters (files and bytes per token `jti`, per user and day) kept until they expire.
    """
    ALTER TABLE attachments ADD COLUMN owner TEXT;
    CREATE TABLE usage_counters (
      tenant TEXT NOT NULL,
      name TEXT NOT NULL,
      files INTEGER NOT NULL,
      bytes INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      PRIMARY KEY (tenant, name)
    ) WITHOUT ROWID;
    CREATE INDEX usage_counters_by_expiry ON usage_counters (expires_at);
    """,
    // 3: leases where one process's memory used to be enough: running idempotency claims expire,
    // blob pins are rows, and each blob's references are counted in its own row (as in
    // PostgresIndex, so both indexes answer the conformance suite the same way).
    """
    ALTER TABLE idempotency_keys ADD COLUMN lease_expires_at INTEGER;
    CREATE TABLE blobs (
      hash TEXT PRIMARY KEY NOT NULL,
      refs INTEGER NOT NULL CHECK (refs >= 0),
      bytes INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO blobs (hash, refs, bytes) SELECT blob, count(*), max(bytes) FROM attachments GROUP BY blob;
    CREATE INDEX blobs_unreferenced ON blobs (hash) WHERE refs = 0;
    DROP INDEX attachments_by_blob;
    CREATE TABLE blob_pins (
      id TEXT PRIMARY KEY NOT NULL,
      hash TEXT NOT NULL,
      expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX blob_pins_by_hash ON blob_pins (hash, expires_at);
    CREATE INDEX blob_pins_by_expiry ON blob_pins (expires_at);
    """,
    // 4: upload state (`FileUploadStore`): offsets, declared lengths, results and writer leases.
    // Lease times are milliseconds: a takeover decision cannot wait for whole seconds.
    """
    CREATE TABLE uploads (
      id TEXT PRIMARY KEY NOT NULL,
      tenant TEXT NOT NULL,
      owner TEXT,
      protocol TEXT NOT NULL,
      metadata BLOB NOT NULL,
      length INTEGER,
      max_length INTEGER NOT NULL,
      received INTEGER NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('receiving', 'completed', 'processed')),
      result_attachment TEXT,
      result_status INTEGER,
      result_headers TEXT,
      result_body BLOB,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      lease_holder TEXT,
      lease_expires_at_ms INTEGER,
      lease_wanted INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX uploads_by_expiry ON uploads (expires_at);
    """,
    // 5: renditions of an attachment per model profile; each holds one reference in `blobs`.
    """
    CREATE TABLE renditions (
      attachment TEXT NOT NULL,
      profile TEXT NOT NULL,
      blob TEXT NOT NULL,
      width INTEGER NOT NULL,
      height INTEGER NOT NULL,
      bytes INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (attachment, profile)
    ) WITHOUT ROWID;
    """,
    // 6: what an attachment is (`image`, `video`) and the kind's own facts (JSON text).
    """
    ALTER TABLE attachments ADD COLUMN kind TEXT NOT NULL DEFAULT 'image';
    ALTER TABLE attachments ADD COLUMN details TEXT;
    """,
    // 7: video renditions as durable jobs (VideoJob).
    """
    CREATE TABLE video_jobs (
      attachment TEXT PRIMARY KEY,
      tenant TEXT NOT NULL,
      state TEXT NOT NULL,
      code TEXT,
      holder TEXT,
      lease_expires_at_ms INTEGER,
      attempts INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX video_jobs_by_state ON video_jobs (state, created_at);
    """,
  ]

  private static func migrate(_ connection: SQLiteConnection) throws {
    try connection.transaction {
      let current = Int(try connection.query("PRAGMA user_version").first?.first?.integer ?? 0)
      guard current <= migrations.count else {
        throw StorageError(
          .database, "index schema \(current) is newer than this build (\(migrations.count))")
      }
      for version in current..<migrations.count {
        try connection.execute(migrations[version])
      }
      if current < migrations.count {
        try connection.execute("PRAGMA user_version = \(migrations.count)")
      }
    }
  }

  // MARK: - Connection use

  /// Runs `body` on the writer connection, one thread at a time.
  @discardableResult
  func write<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
    try writer.withLock { connection in try body(connection) }
  }

  /// Runs `body` on a reader connection of this thread's own for the call.
  func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
    let connection = try readers.withLock { $0.popLast() } ?? openReader()
    defer {
      let limit = configuration.idleReaders
      readers.withLock { idle in
        if idle.count < limit { idle.append(connection) }
      }
    }
    return try body(connection)
  }

  private func openReader() throws -> SQLiteConnection {
    let connection = try SQLiteConnection(
      path: configuration.path, readOnly: false,
      busyTimeoutMilliseconds: Int32(clamping: configuration.busyTimeoutMilliseconds))
    // Read-write open (a read-only one could not create the WAL index), but refusing writes.
    try connection.execute("PRAGMA query_only = 1")
    return connection
  }

  // MARK: - Attachments

  private static let columns = """
    id, tenant, blob, content_type, width, height, bytes, source_format, source_width, source_height, \
    source_bytes, source_orientation, source_orientation_source, source_colour_profile, created_at, expires_at, \
    owner, kind, details
    """

  public func insert(_ record: AttachmentRecord) throws {
    let source = record.source
    let values: [SQLValue] = [
      .text(record.id), .text(record.tenant), .text(record.blob.hex), .text(record.contentType),
      .integer(Int64(record.width)), .integer(Int64(record.height)), .integer(Int64(record.bytes)),
      .text(source.format), .integer(Int64(source.width)), .integer(Int64(source.height)),
      .integer(Int64(source.bytes)), .integer(Int64(source.orientation)),
      source.orientationSource.map(SQLValue.text) ?? .null, source.colourProfile.map(SQLValue.text) ?? .null,
      .integer(Self.seconds(record.createdAt)), .integer(Self.seconds(record.expiresAt)),
      record.owner.map(SQLValue.text) ?? .null, .text(record.kind),
      record.details.map(SQLValue.text) ?? .null,
    ]
    let placeholders = Array(repeating: "?", count: values.count).joined(separator: ", ")
    try write { connection in
      try connection.transaction {
        try connection.query("INSERT INTO attachments (\(Self.columns)) VALUES (\(placeholders))", values)
        try connection.query(
          """
          INSERT INTO blobs (hash, refs, bytes) VALUES (?, 1, ?)
          ON CONFLICT (hash) DO UPDATE SET refs = refs + 1, bytes = excluded.bytes
          """, [.text(record.blob.hex), .integer(Int64(record.bytes))])
      }
    }
  }

  public func attachment(tenant: String, id: String, now: Date) throws -> AttachmentRecord? {
    let rows = try read {
      try $0.query(
        "SELECT \(Self.columns) FROM attachments WHERE id = ? AND tenant = ? AND expires_at > ?",
        [.text(id), .text(tenant), .integer(Self.seconds(now))])
    }
    return try rows.first.map(Self.record)
  }

  public func tenant(ofAttachment id: String, now: Date) throws -> String? {
    let rows = try read {
      try $0.query(
        "SELECT tenant FROM attachments WHERE id = ? AND expires_at > ?",
        [.text(id), .integer(Self.seconds(now))])
    }
    return rows.first?[0].text
  }

  public func deleteAttachment(tenant: String, id: String) throws -> AttachmentRecord? {
    try deleteReleasing(
      "DELETE FROM attachments WHERE id = ? AND tenant = ? RETURNING \(Self.columns)",
      [.text(id), .text(tenant)]
    ).first
  }

  public func deleteExpired(now: Date, limit: Int) throws -> [AttachmentRecord] {
    try deleteReleasing(
      """
      DELETE FROM attachments WHERE id IN
        (SELECT id FROM attachments WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)
      RETURNING \(Self.columns)
      """, [.integer(Self.seconds(now)), .integer(Int64(max(0, limit)))])
  }

  /// Runs a DELETE … RETURNING of attachment rows, deletes their renditions and drops every
  /// blob reference they held, atomically.
  private func deleteReleasing(_ sql: String, _ parameters: [SQLValue]) throws -> [AttachmentRecord] {
    try write { connection in
      try connection.transaction {
        let records = try connection.query(sql, parameters).map(Self.record)
        var released: [BlobHash: Int] = [:]
        for record in records {
          released[record.blob, default: 0] += 1
          try connection.query("DELETE FROM video_jobs WHERE attachment = ?", [.text(record.id)])
          for row in try connection.query(
            "DELETE FROM renditions WHERE attachment = ? RETURNING blob", [.text(record.id)])
          {
            guard let blob = row.first?.text.flatMap(BlobHash.init(hex:)) else { continue }
            released[blob, default: 0] += 1
          }
        }
        for (blob, count) in released {
          try connection.query(
            "UPDATE blobs SET refs = refs - ? WHERE hash = ?", [.integer(Int64(count)), .text(blob.hex)])
        }
        return records
      }
    }
  }

  public func referenceCount(of blob: BlobHash) throws -> Int {
    let rows = try read { try $0.query("SELECT refs FROM blobs WHERE hash = ?", [.text(blob.hex)]) }
    return Int(rows.first?.first?.integer ?? 0)
  }

  public func statistics() throws -> IndexStatistics {
    try read { connection in
      let rows = try connection.query("SELECT count(*), coalesce(sum(bytes), 0) FROM attachments")
      let blobs = try connection.query("SELECT count(*), coalesce(sum(bytes), 0) FROM blobs WHERE refs > 0")
      let keys = try connection.query("SELECT count(*) FROM idempotency_keys")
      return IndexStatistics(
        attachments: Int(rows[0][0].integer ?? 0), attachmentBytes: Int(rows[0][1].integer ?? 0),
        blobs: Int(blobs[0][0].integer ?? 0), blobBytes: Int(blobs[0][1].integer ?? 0),
        idempotencyKeys: Int(keys[0][0].integer ?? 0))
    }
  }

  // MARK: - Tenants

  public func setRetention(_ retention: TimeInterval?, tenant: String) throws {
    try write { connection in
      if let retention {
        try connection.query(
          """
          INSERT INTO tenants (id, retention_seconds) VALUES (?, ?)
          ON CONFLICT (id) DO UPDATE SET retention_seconds = excluded.retention_seconds
          """, [.text(tenant), .real(retention)])
      } else {
        try connection.query("DELETE FROM tenants WHERE id = ?", [.text(tenant)])
      }
    }
  }

  public func retention(tenant: String) throws -> TimeInterval? {
    let rows = try read {
      try $0.query("SELECT retention_seconds FROM tenants WHERE id = ?", [.text(tenant)])
    }
    return rows.first?.first?.real
  }

  // MARK: - Health

  public func checkWritable(now: Date) throws {
    try write {
      try $0.query(
        "INSERT INTO health (id, checked_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
        [.integer(Self.seconds(now))])
    }
  }

  // MARK: - Conversions

  static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

  /// The end of a lease of `lease` seconds from `now`, in whole seconds (never shorter than asked).
  static func leaseEnd(_ now: Date, _ lease: TimeInterval) -> Int64 {
    seconds(now) + Int64(max(0, lease).rounded(.up))
  }

  static func date(_ value: SQLValue) -> Date {
    Date(timeIntervalSince1970: TimeInterval(value.integer ?? 0))
  }

  private static func record(_ row: [SQLValue]) throws -> AttachmentRecord {
    guard row.count == 19, let id = row[0].text, let tenant = row[1].text,
      let blob = row[2].text.flatMap(BlobHash.init(hex:)), let contentType = row[3].text,
      let format = row[7].text
    else { throw StorageError(.corrupt, "malformed attachment row") }
    func int(_ index: Int) -> Int { Int(row[index].integer ?? 0) }
    let source = SourceInfo(
      format: format, width: int(8), height: int(9), bytes: int(10), orientation: int(11),
      orientationSource: row[12].text, colourProfile: row[13].text)
    return AttachmentRecord(
      id: id, tenant: tenant, blob: blob, contentType: contentType, width: int(4), height: int(5),
      bytes: int(6), source: source, createdAt: date(row[14]), expiresAt: date(row[15]), owner: row[16].text,
      kind: row[17].text ?? "image", details: row[18].text)
  }
}
