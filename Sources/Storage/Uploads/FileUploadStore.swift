private import Crypto
import Foundation

/// Uploads spooled to files under `<dataDir>/uploads/`, their state in the `uploads` table of
/// the attachment index (`SQLiteIndex`): the embedded `UploadStore`, a `LeasedUploadStore` over
/// that index and `FileUploadBytes`.
///
/// A spool file is named by the upload id and holds its bytes in order; only the first
/// `offset` bytes (the index's `received`) count. A flush writes at the committed offset,
/// `fdatasync`s the file, then commits the new offset, so the index never claims a byte that
/// is not on disk; bytes past it (a write cut by a crash or a failed flush) are cut off when the
/// next writer opens the file or the store is opened again.
///
/// The data directory belongs to one process (as the embedded index does): opening the store
/// releases every lease and repairs the spool files. `exclusive: false` skips that, for a second
/// store on the same files (which then coordinates through the index leases alone).
public final class FileUploadStore: ComposedUploadStore {
  /// What opening the store found and repaired.
  public struct Recovery: Sendable, Hashable {
    /// Spool files with no live upload (or of processed uploads) removed.
    public var removedFiles = 0
    /// Spool files cut back to their committed offset (bytes written but never acknowledged).
    public var truncatedFiles = 0
    /// Uploads whose file held fewer bytes than their offset claimed (lost by the disk):
    /// their offset was lowered to what is there, so clients resend the rest.
    public var loweredOffsets = 0
    /// Leases of an earlier process released.
    public var releasedLeases = 0

    /// Nothing found.
    public init() {}
  }

  /// The settings in force.
  public var configuration: UploadStoreConfiguration { leased.configuration }
  /// The spool directory, `<dataDir>/uploads`.
  public var directory: String { leased.bytes.directory }
  /// What opening the store repaired.
  public let recovery: Recovery

  let leased: LeasedUploadStore<SQLiteIndex, FileUploadBytes>

  /// Opens the store spooling under `dataDirectory/uploads`, state in `index`.
  ///
  /// With `exclusive` (the default) the directory is this process's alone: leases of an earlier
  /// process are released and spool files are repaired against the index.
  public init(
    dataDirectory: String, index: SQLiteIndex, configuration: UploadStoreConfiguration = .init(),
    exclusive: Bool = true, now: @escaping @Sendable () -> Date = { Date() }
  ) throws {
    try configuration.validate()
    let bytes = try FileUploadBytes(
      dataDirectory: dataDirectory, index: index, syncOffsetCommits: configuration.syncOffsetCommits)
    self.recovery = exclusive ? try bytes.recover() : Recovery()
    // Tokens random per opening: another store on the same files has tokens of its own.
    self.leased = LeasedUploadStore(
      rows: index, bytes: bytes, configuration: configuration, instance: SecureRandom.identifier(prefix: "w"),
      clock: now)
  }

  /// The attachment index holding the upload rows.
  var index: SQLiteIndex { leased.rows }

  func spoolPath(_ id: String) -> String { leased.bytes.spoolPath(id) }
}
