import Foundation
import Glibc

/// Upload bytes in spool files under `<dataDir>/uploads/`, one per upload, named by its id: the
/// bytes backend of `FileUploadStore` (which says how a spool file is written and repaired).
/// Its rows are plain `UploadRecord`s: the path follows from the id.
struct FileUploadBytes: UploadBytes {
  /// The spool directory, `<dataDir>/uploads`.
  let directory: String
  let index: SQLiteIndex
  /// Whether an offset commit waits for the index's fsync (`syncOffsetCommits`).
  let syncOffsetCommits: Bool

  /// Spools under `dataDirectory/uploads`, made durably when missing.
  init(dataDirectory: String, index: SQLiteIndex, syncOffsetCommits: Bool) throws {
    self.directory = dataDirectory + "/uploads"
    self.index = index
    self.syncOffsetCommits = syncOffsetCommits
    try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
    if try FileSystem.makeDirectory(directory) { try FileSystem.fsyncDirectory(dataDirectory) }
  }

  func spoolPath(_ id: String) -> String { directory + "/" + id }

  func newRow(_ record: UploadRecord) -> UploadRecord { record }

  func openSpool(for row: UploadRecord, token: String, offset: Int?) throws
    -> (spool: any UploadSpool, upload: UploadState)
  {
    var upload = row.state
    let (fd, size) = try openFile(upload.id, offset: upload.offset)
    if size < upload.offset {
      // The disk lost acknowledged bytes (never on a sound disk): say where the file really ends.
      do {
        try index.lowerUploadOffset(id: upload.id, to: size)
        upload.offset = size
        if let offset, offset != size {
          throw StorageError(.offsetMismatch, "spool of \(upload.id) ends at \(size)", offset: size)
        }
      } catch {
        FileSystem.close(fd)
        throw error
      }
    }
    return (FileUploadSpool(bytes: self, id: upload.id, token: token, fd: fd), upload)
  }

  func body(of row: UploadRecord, claim token: String) throws -> any UploadBody {
    do {
      return try MappedUploadBody(path: spoolPath(row.state.id), length: row.state.length ?? row.state.offset)
    } catch let error as StorageError where error.code == .notFound {
      throw StorageError(.corrupt, "spool file of completed upload \(row.state.id) is missing")
    }
  }

  func remove(_ row: UploadRecord) {
    // A failure leaves a file the next opening removes.
    _ = try? FileSystem.unlink(spoolPath(row.state.id))
  }

  /// Leftovers are found when the store is opened (`recover`), not while it runs.
  func sweep() {}

  /// Opens the spool file for writing (creating it durably) and cuts off anything past
  /// `offset`. Returns the descriptor and the file's size before the cut.
  ///
  /// The cut is not fsynced: the next flush's `fdatasync` makes the new size durable, and until
  /// then a crash only leaves bytes past the offset, which recovery cuts again.
  private func openFile(_ id: String, offset: Int) throws -> (fd: Int32, size: Int) {
    let path = spoolPath(id)
    let fd: Int32
    if try FileSystem.status(path) != nil {
      fd = try FileSystem.open(path, O_RDWR)
    } else {
      // The slot lock is held: nobody else creates this file meanwhile.
      fd = try FileSystem.open(path, O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
      do {
        try FileSystem.fsyncDirectory(directory)
      } catch {
        FileSystem.close(fd)
        throw error
      }
    }
    do {
      let size = Int(try FileSystem.status(fd, path: path).st_size)
      if size > offset { try FileSystem.truncate(fd, to: offset, path: path) }
      return (fd, size)
    } catch {
      FileSystem.close(fd)
      throw error
    }
  }

  // MARK: - Recovery

  /// Releases every lease, removes spool files of no live upload and cuts the others back to
  /// their committed offset.
  func recover() throws -> FileUploadStore.Recovery {
    var recovery = FileUploadStore.Recovery()
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
