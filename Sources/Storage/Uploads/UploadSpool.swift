import Foundation

/// Where a `BufferedUploadWriter` puts one upload's bytes, and how it makes them durable and
/// acknowledged: a spool file and the SQLite row (`FileUploadSpool`), or parts and a tail object
/// in S3 and the PostgreSQL row (`S3UploadSpool`).
///
/// Called only under the upload's slot lock (`UploadSlots`), one call at a time, from whichever
/// thread holds it; `discard` may also come from the writer's `deinit`.
protocol UploadSpool: AnyObject, Sendable {
  /// Takes the buffered bytes, which start at upload offset `offset` (committed plus written so
  /// far). They need not be durable yet. Throws `.preempted` when it learns the lease is lost.
  func write(_ buffer: WriteBuffer, at offset: Int) throws

  /// Makes every byte below `to` durable, then moves the upload's offset from `from` to `to`
  /// if the writer still holds the lease, renewing it until `leaseUntil`, or releasing it when
  /// nil. With `to == from` only the lease changes (nothing is written). `.lost` when the lease
  /// is not the writer's any more; then nothing the spool holds was acknowledged.
  func commit(from: Int, to: Int, leaseUntil: Date?) throws -> UploadCommit

  /// Drops what was written past `offset` (the committed offset) after a failed write or
  /// commit: nothing there was acknowledged, and on a full disk it is space another upload
  /// needs. Best effort; the next writer cuts the spool back to the offset anyway.
  func cutBack(to offset: Int)

  /// Frees what the spool holds locally (descriptors, temporary files). Idempotent.
  func discard()
}

/// What an offset commit found.
enum UploadCommit: Equatable {
  /// Committed; `wanted` when a request of another instance asks for the lease.
  case committed(wanted: Bool)
  /// The lease is not this writer's any more (taken after expiry, or the upload is gone).
  case lost
}
