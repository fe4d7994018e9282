import Foundation

/// Where the bytes of uploads live, as `LeasedUploadStore` uses them: spool files under
/// `<dataDir>/uploads` (`FileUploadBytes`) or parts and tail objects in a bucket
/// (`S3UploadBytes`).
///
/// A backend keeps what it needs per upload in its `Row`, which its index stores: it chooses
/// the row type, so a pair of backends agrees on it (`Row == UploadRows.Row`). The store calls
/// it only for a row it holds the lease or the processing claim of, or one just deleted.
protocol UploadBytes: Sendable {
  associatedtype Row: UploadRow

  /// The row of a new upload: `record` plus this backend's starting columns.
  ///
  /// Throws `.invalidArgument` for an upload the backend cannot hold.
  func newRow(_ record: UploadRecord) throws -> Row

  /// The spool a writer that has just taken `row`'s lease with `token` appends through, and the
  /// upload as the writer starts it: the backend may find fewer bytes than the row's offset
  /// (a disk that lost acknowledged ones) and lower it. `offset` is the one the request named.
  ///
  /// Called with the upload's slot lock held; a throw leaves the lease to the store to give back.
  func openSpool(for row: Row, token: String, offset: Int?) throws -> (
    spool: any UploadSpool, upload: UploadState
  )

  /// The bytes of the completed upload `row`, whose processing claim `token` holds.
  ///
  /// Called without the slot lock (it may download): the claim keeps other requests out.
  func body(of row: Row, claim token: String) throws -> any UploadBody

  /// Removes the bytes of an upload that was deleted or processed. Best effort: what is left
  /// belongs to no live row and is found by the next recovery or sweep.
  func remove(_ row: Row)

  /// Runs after an expiry batch that found no more expired rows: the time for a backend to
  /// look for leftovers no row owns, when it does that while running.
  func sweep() throws
}
