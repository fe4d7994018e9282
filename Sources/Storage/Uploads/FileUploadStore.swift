private import Crypto
import Foundation
import Glibc

/// Uploads spooled to files under `<dataDir>/uploads/`, their state in the `uploads` table of
/// the attachment index (`SQLiteIndex`): the embedded `UploadStore`.
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
public final class FileUploadStore: UploadStore {
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
  public let configuration: UploadStoreConfiguration
  /// The spool directory, `<dataDir>/uploads`.
  public let directory: String
  /// What opening the store repaired.
  public let recovery: Recovery

  let index: SQLiteIndex
  let slots = UploadSlots()
  /// This store's lease-token prefix: random per opening, so another store's tokens differ.
  let instance: String
  let clock: @Sendable () -> Date

  /// Opens the store spooling under `dataDirectory/uploads`, state in `index`.
  ///
  /// With `exclusive` (the default) the directory is this process's alone: leases of an earlier
  /// process are released and spool files are repaired against the index.
  public init(
    dataDirectory: String, index: SQLiteIndex, configuration: UploadStoreConfiguration = .init(),
    exclusive: Bool = true, now: @escaping @Sendable () -> Date = { Date() }
  ) throws {
    try configuration.validate()
    self.configuration = configuration
    self.directory = dataDirectory + "/uploads"
    self.index = index
    self.instance = SecureRandom.identifier(prefix: "w")
    self.clock = now
    try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
    if try FileSystem.makeDirectory(directory) { try FileSystem.fsyncDirectory(dataDirectory) }
    self.recovery = exclusive ? try Self.recover(directory: directory, index: index) : Recovery()
  }

  /// The current time by the injected clock.
  var now: Date { clock() }

  func spoolPath(_ id: String) -> String { directory + "/" + id }

  static func isUploadID(_ id: String) -> Bool { SecureRandom.isIdentifier(id, prefix: "upl_") }

  // MARK: - Create, read, cancel, expire

  public func create(_ upload: NewUpload) throws -> UploadState {
    var record = try UploadRecord(new: upload, configuration: configuration, now: now)
    do {
      try index.insertUpload(record)
    } catch let error as StorageError where error.code == .conflict {
      // 128 random bits do not collide; if they ever did, a second draw settles it.
      record.state.id = SecureRandom.identifier(prefix: "upl_")
      try index.insertUpload(record)
    }
    return record.state
  }

  public func state(tenant: String, id: String) throws -> UploadState? {
    guard Self.isUploadID(id) else { return nil }
    return try index.uploadRecord(id: id, tenant: tenant, now: now)?.state
  }

  @discardableResult
  public func cancel(tenant: String, id: String) throws -> Bool {
    guard Self.isUploadID(id) else { return false }
    var callback: (@Sendable () -> Void)?
    let current = now
    let removed = try slots.withLock(id) { holder -> Bool in
      // Cancelling another tenant's upload must not disturb its writer: look first.
      guard try index.uploadRecord(id: id, tenant: tenant, now: current) != nil else { return false }
      callback = holder.writer?.preempt(persist: false, holder: &holder)
      guard let expiry = try index.deleteUpload(id: id, tenant: tenant) else { return false }
      _ = try? FileSystem.unlink(spoolPath(id))
      return expiry > current
    }
    callback?()
    return removed
  }

  public func deleteExpired(limit: Int) throws -> [String] {
    let expired = try index.deleteExpiredUploads(now: now, limit: limit)
    for (id, _) in expired {
      let callback = try slots.withLock(id) { holder in
        let callback = holder.writer?.preempt(persist: false, holder: &holder)
        // The row is gone: a failure here leaves a file the next opening removes.
        _ = try? FileSystem.unlink(spoolPath(id))
        return callback
      }
      callback?()
    }
    return expired.map(\.id)
  }

  // MARK: - Recovery

  /// Releases every lease, removes spool files of no live upload and cuts the others back to
  /// their committed offset.
  private static func recover(directory: String, index: SQLiteIndex) throws -> Recovery {
    var recovery = Recovery()
    recovery.releasedLeases = try index.clearUploadLeases(instance: nil)
    let uploads = try index.uploadOffsets()
    var seen = Set<String>()
    for name in try FileSystem.list(directory) {
      let path = directory + "/" + name
      guard let upload = uploads[name], upload.status != .processed else {
        if try FileSystem.unlink(path) { recovery.removedFiles += 1 }
        continue
      }
      seen.insert(name)
      let committed = upload.status == .receiving ? upload.offset : (upload.length ?? upload.offset)
      guard let info = try FileSystem.status(path) else { continue }
      let size = Int(info.st_size)
      if size > committed {
        let fd = try FileSystem.open(path, O_WRONLY)
        defer { FileSystem.close(fd) }
        try FileSystem.truncate(fd, to: committed, path: path)
        try FileSystem.fdatasync(fd, path: path)
        recovery.truncatedFiles += 1
      } else if size < committed && upload.status == .receiving {
        try index.lowerUploadOffset(id: name, to: size)
        recovery.loweredOffsets += 1
      }
    }
    // A receiving upload with bytes but no file lost them all.
    for (id, upload) in uploads where upload.status == .receiving && upload.offset > 0 && !seen.contains(id) {
      try index.lowerUploadOffset(id: id, to: 0)
      recovery.loweredOffsets += 1
    }
    return recovery
  }
}
