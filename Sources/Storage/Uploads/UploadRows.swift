import Foundation

/// One upload's row as an index stores it: the shared `UploadRecord` (state and lease), plus the
/// columns a bytes backend keeps per upload (`S3UploadRow`'s parts and tail). A backend that
/// keeps nothing uses the record itself.
protocol UploadRow: Sendable, Hashable {
  /// The state and the lease, which `LeasedUploadStore` decides on.
  var record: UploadRecord { get set }
}

extension UploadRecord: UploadRow {
  /// The row of a backend with no columns of its own (the spool files need none).
  var record: UploadRecord {
    get { self }
    set { self = newValue }
  }
}

/// The upload rows of an index, as `LeasedUploadStore` uses them: the `uploads` table of
/// `SQLiteIndex` (rows are `UploadRecord`s) or of `PostgresIndex` (`S3UploadRow`s).
///
/// Every decision is made in Swift on a row read under a lock (`updateUpload`), so each index
/// needs only these statements; the offset commit of a flush, which also names the bytes
/// backend's columns, is the bytes backend's own (its `UploadSpool` runs it).
protocol UploadRows: Sendable {
  associatedtype Row: UploadRow

  /// Inserts a new upload; `.conflict` when its id is taken.
  func insertUpload(_ row: Row) throws

  /// The tenant's unexpired upload, or nil.
  func uploadRow(id: String, tenant: String, now: Date) throws -> Row?

  /// Runs `body` on the tenant's unexpired row, locked, in one transaction, and stores what it
  /// changed; nil (and `body` not run) when there is no such row. A throw rolls everything back.
  func updateUpload<T>(id: String, tenant: String, now: Date, _ body: (inout Row) throws -> T) throws -> T?

  /// Deletes the tenant's upload (expired or not) and returns it; nil when there was none.
  func deleteUpload(id: String, tenant: String) throws -> Row?

  /// Deletes up to `limit` uploads that expired at or before `now` and returns them. Several
  /// processes may call it at once: each row goes to one of them.
  func deleteExpiredUploads(now: Date, limit: Int) throws -> [Row]

  /// Whether the process that leases as `instance` is alive. An index that cannot tell says
  /// true: the lease then binds until it lapses.
  func isInstanceAlive(_ instance: String) -> Bool
}

extension UploadRows {
  func isInstanceAlive(_ instance: String) -> Bool { true }
}
