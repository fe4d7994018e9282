import Foundation
import Glibc

extension FileUploadStore {
  public func openWriter(
    tenant: String, id: String, offset: Int?, length: Int?, onPreempted: @escaping @Sendable () -> Void
  ) throws -> any UploadWriter {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let token = UploadRecord.newToken(instance: instance)
    return try slots.takingOver(id, configuration: configuration) { holder -> BufferedUploadWriter? in
      let now = self.now
      let expiry = now.addingTimeInterval(configuration.leaseDuration)
      let taken = try index.updateUpload(id: id, tenant: tenant, now: now) { record in
        let attempt = try record.takeWriterLease(
          token: token, instance: instance, now: now, until: expiry, offset: offset, length: length)
        return attempt == .acquired ? record.state : nil
      }
      guard let taken else { throw StorageError(.notFound, "no upload \(id)") }
      guard var upload = taken else { return nil }
      let fd: Int32
      do {
        let spool = try openSpool(id, offset: upload.offset)
        fd = spool.fd
        if spool.size < upload.offset {
          // The disk lost acknowledged bytes (never on a sound disk): say where the file really ends.
          try index.lowerUploadOffset(id: id, to: spool.size)
          upload.offset = spool.size
          if let offset, offset != spool.size {
            FileSystem.close(fd)
            throw StorageError(.offsetMismatch, "spool of \(id) ends at \(spool.size)", offset: spool.size)
          }
        }
      } catch {
        releaseLease(id, token: token, offset: upload.offset)
        throw error
      }
      let writer = BufferedUploadWriter(
        slots: slots, spool: FileUploadSpool(store: self, id: id, token: token, fd: fd),
        configuration: configuration, clock: clock, upload: upload, token: token, leaseExpiresAt: expiry,
        onPreempted: onPreempted)
      holder.writer = writer
      return writer
    }
  }

  @discardableResult
  public func setLength(tenant: String, id: String, length: Int) throws -> UploadState {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    return try slots.takingOver(id, configuration: configuration) { _ -> UploadState? in
      let now = self.now
      let outcome = try index.updateUpload(id: id, tenant: tenant, now: now) { record -> UploadState? in
        if record.leaseBinds(now: now, instance: instance) {
          record.leaseWanted = true
          return nil
        }
        try record.declare(length: length)
        return record.state
      }
      guard let outcome else { throw StorageError(.notFound, "no upload \(id)") }
      return outcome
    }
  }

  public func complete(tenant: String, id: String) throws -> UploadCompletion {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let token = UploadRecord.newToken(instance: instance)
    return try slots.takingOver(id, configuration: configuration) { _ -> UploadCompletion? in
      let now = self.now
      let expiry = now.addingTimeInterval(configuration.leaseDuration)
      let claimed = try index.updateUpload(id: id, tenant: tenant, now: now) { record -> UploadState? in
        let attempt = try record.claimProcessing(token: token, instance: instance, now: now, until: expiry)
        return attempt == .acquired ? record.state : nil
      }
      guard let claimed else { throw StorageError(.notFound, "no upload \(id)") }
      guard let upload = claimed else { return nil }
      if upload.status == .processed { return .processed(upload) }
      do {
        let body = try MappedUploadBody(path: spoolPath(id), length: upload.length ?? upload.offset)
        return .body(body, upload)
      } catch {
        // Give the claim back: a retry should find the same error, not a claim held for a minute.
        _ = try? index.updateUpload(id: id, tenant: tenant, now: now) { record in
          if record.leaseHolder == token { record.release() }
        }
        if let error = error as? StorageError, error.code == .notFound {
          throw StorageError(.corrupt, "spool file of completed upload \(id) is missing")
        }
        throw error
      }
    }
  }

  @discardableResult
  public func recordResult(tenant: String, id: String, result: UploadResult) throws -> UploadState {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let recorded = try slots.withLock(id) { _ in
      try index.updateUpload(id: id, tenant: tenant, now: now) { record in
        try record.record(result)
        return record.state
      }
    }
    guard let recorded else { throw StorageError(.notFound, "no upload \(id)") }
    // The body is stored as an attachment now; the spool is dead weight. A failure leaves a
    // file the next opening removes.
    _ = try? FileSystem.unlink(spoolPath(id))
    return recorded
  }

  public func abandonProcessing(tenant: String, id: String) throws {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let found = try index.updateUpload(id: id, tenant: tenant, now: now) { record -> Bool in
      if record.state.status == .completed { record.release() }
      return true
    }
    guard found == true else { throw StorageError(.notFound, "no upload \(id)") }
  }

  // MARK: - Internals

  /// Opens the spool file for writing (creating it durably) and cuts off anything past
  /// `offset`. Returns the descriptor and the file's size before the cut.
  ///
  /// The cut is not fsynced: the next flush's `fdatasync` makes the new size durable, and until
  /// then a crash only leaves bytes past the offset, which recovery cuts again.
  private func openSpool(_ id: String, offset: Int) throws -> (fd: Int32, size: Int) {
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

  private func releaseLease(_ id: String, token: String, offset: Int) {
    _ = try? index.commitUploadOffset(id: id, token: token, from: offset, to: offset, leaseUntil: nil)
  }
}
