import Foundation

/// The one `UploadStore`: the lease, claim, takeover and slot logic, written once over an index's
/// upload rows (`UploadRows`) and a place for the bytes (`UploadBytes`). `FileUploadStore`
/// (SQLite + spool files) and `S3UploadStore` (PostgreSQL + a bucket) are this store over their
/// pair, under their public names (`ComposedUploadStore`).
///
/// **Per-upload bytes state.** A bytes backend that keeps state per upload (the S3 one: its
/// multipart upload, committed parts, tail object, part size) does so in the row: it chooses the
/// row type (`UploadBytes.Row`, an `UploadRow` wrapping the shared `UploadRecord`), and the index
/// of the pair stores and decodes that type. The pair is fixed at compile time by the generic
/// parameters (`Rows.Row == Bytes.Row`), so no state is cast or serialised into an opaque
/// column, and the store reads and writes only `row.record`. The statements that name the
/// backend's columns (an offset commit with its parts and tail, the multipart upload id) are
/// the backend's own, on the index it shares with the rows: an offset commit stays one
/// conditional statement.
///
/// **Order.** Every decision on a row is made by `UploadRecord` under the row lock
/// (`updateUpload`), inside the upload's slot lock in this process (`UploadSlots`), which a new
/// request takes over from a writer in flight. The bytes come before the offset: a writer's
/// spool makes its bytes durable before it commits the offset. Bytes of a deleted upload go
/// after its row (and after its writer is stopped), outside the slot lock; so do the bytes of a
/// completion, under the processing claim.
///
/// A value: its copies share the backends and the slots, so they are one store.
struct LeasedUploadStore<Rows: UploadRows, Bytes: UploadBytes>: UploadStore where Rows.Row == Bytes.Row {
  typealias Row = Rows.Row

  let rows: Rows
  let bytes: Bytes
  let configuration: UploadStoreConfiguration
  let slots = UploadSlots()
  /// This store's lease-token prefix (see `UploadRecord.newToken`).
  let instance: String
  let clock: @Sendable () -> Date

  /// The current time by the injected clock.
  var now: Date { clock() }

  // MARK: - Create, read, cancel, expire

  func create(_ upload: NewUpload) throws -> UploadState {
    var row = try bytes.newRow(UploadRecord(new: upload, configuration: configuration, now: now))
    do {
      try rows.insertUpload(row)
    } catch let error as StorageError where error.code == .conflict {
      // 128 random bits do not collide; if they ever did, a second draw settles it.
      row.record.state.id = UploadRecord.newID()
      try rows.insertUpload(row)
    }
    return row.record.state
  }

  func state(tenant: String, id: String) throws -> UploadState? {
    guard UploadRecord.isID(id) else { return nil }
    return try rows.uploadRow(id: id, tenant: tenant, now: now)?.record.state
  }

  @discardableResult
  func cancel(tenant: String, id: String) throws -> Bool {
    guard UploadRecord.isID(id) else { return false }
    var callback: (@Sendable () -> Void)?
    let current = now
    let removed = try slots.withLock(id) { holder -> Row? in
      // Cancelling another tenant's upload must not disturb its writer: look first.
      guard try rows.uploadRow(id: id, tenant: tenant, now: current) != nil else { return nil }
      callback = holder.writer?.preempt(persist: false, holder: &holder)
      return try rows.deleteUpload(id: id, tenant: tenant)
    }
    callback?()
    guard let removed else { return false }
    bytes.remove(removed)
    return removed.record.state.expiresAt > current
  }

  func deleteExpired(limit: Int) throws -> [String] {
    let expired = try rows.deleteExpiredUploads(now: now, limit: limit)
    for row in expired {
      let callback = try slots.withLock(row.record.state.id) { holder in
        holder.writer?.preempt(persist: false, holder: &holder)
      }
      callback?()
      bytes.remove(row)
    }
    if expired.count < limit { try bytes.sweep() }
    return expired.map(\.record.state.id)
  }
}
