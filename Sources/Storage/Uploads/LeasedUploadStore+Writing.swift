import Foundation

extension LeasedUploadStore {
  func openWriter(
    tenant: String, id: String, offset: Int?, length: Int?, onPreempted: @escaping @Sendable () -> Void
  ) throws -> any UploadWriter {
    guard UploadRecord.isID(id) else { throw Self.notFound(id) }
    let token = UploadRecord.newToken(instance: instance)
    return try slots.takingOver(id, configuration: configuration) { holder -> BufferedUploadWriter? in
      let now = self.now
      let expiry = now.addingTimeInterval(configuration.leaseDuration)
      let taken = try rows.updateUpload(id: id, tenant: tenant, now: now) { row -> Row? in
        let attempt = try row.record.takeWriterLease(
          token: token, instance: instance, now: now, until: expiry, offset: offset, length: length)
        return attempt == .acquired ? row : nil
      }
      guard let taken else { throw Self.notFound(id) }
      guard let row = taken else {
        releaseIfHolderIsGone(id: id, tenant: tenant)
        return nil
      }
      let opened: (spool: any UploadSpool, upload: UploadState)
      do {
        opened = try bytes.openSpool(for: row, token: token, offset: offset)
      } catch {
        _ = giveBack(id, tenant: tenant, token: token)
        throw error
      }
      let writer = BufferedUploadWriter(
        slots: slots, spool: opened.spool, configuration: configuration, clock: clock, upload: opened.upload,
        token: token, leaseExpiresAt: expiry, onPreempted: onPreempted)
      holder.writer = writer
      return writer
    }
  }

  @discardableResult
  func setLength(tenant: String, id: String, length: Int) throws -> UploadState {
    guard UploadRecord.isID(id) else { throw Self.notFound(id) }
    return try slots.takingOver(id, configuration: configuration) { _ -> UploadState? in
      let now = self.now
      let outcome = try rows.updateUpload(id: id, tenant: tenant, now: now) { row -> UploadState? in
        if row.record.leaseBinds(now: now, instance: instance) {
          row.record.leaseWanted = true
          return nil
        }
        try row.record.declare(length: length)
        return row.record.state
      }
      guard let outcome else { throw Self.notFound(id) }
      if outcome == nil { releaseIfHolderIsGone(id: id, tenant: tenant) }
      return outcome
    }
  }

  func complete(tenant: String, id: String) throws -> UploadCompletion {
    guard UploadRecord.isID(id) else { throw Self.notFound(id) }
    let token = UploadRecord.newToken(instance: instance)
    let claimed = try slots.takingOver(id, configuration: configuration) { _ -> Row? in
      let now = self.now
      let expiry = now.addingTimeInterval(configuration.leaseDuration)
      let claimed: Row??
      do {
        claimed = try rows.updateUpload(id: id, tenant: tenant, now: now) { row -> Row? in
          let attempt = try row.record.claimProcessing(
            token: token, instance: instance, now: now, until: expiry)
          return attempt == .acquired ? row : nil
        }
      } catch let error as StorageError where error.code == .inProgress {
        // Another node's processing claim binds, unless that node is gone: then it is released
        // and the next attempt claims.
        guard releaseIfHolderIsGone(id: id, tenant: tenant) else { throw error }
        return nil
      }
      guard let claimed else { throw Self.notFound(id) }
      if claimed == nil { releaseIfHolderIsGone(id: id, tenant: tenant) }
      return claimed
    }
    let upload = claimed.record.state
    if upload.status == .processed { return .processed(upload) }
    // The bytes are read outside the slot lock (an object store may have to assemble and
    // download them): the processing claim keeps other requests out meanwhile.
    do {
      return .body(try bytes.body(of: claimed, claim: token), upload)
    } catch {
      // Give the claim back: a retry should find the same error, not a claim held for a minute.
      // An upload cancelled or expired meanwhile took its bytes along: it is missing, not broken.
      if giveBack(id, tenant: tenant, token: token) == false { throw Self.notFound(id) }
      throw error
    }
  }

  @discardableResult
  func recordResult(tenant: String, id: String, result: UploadResult) throws -> UploadState {
    guard UploadRecord.isID(id) else { throw Self.notFound(id) }
    let recorded = try slots.withLock(id) { _ in
      try rows.updateUpload(id: id, tenant: tenant, now: now) { row in
        try row.record.record(result)
        return row
      }
    }
    guard let recorded else { throw Self.notFound(id) }
    // The body is stored as an attachment now; its bytes are dead weight.
    bytes.remove(recorded)
    return recorded.record.state
  }

  func abandonProcessing(tenant: String, id: String) throws {
    guard UploadRecord.isID(id) else { throw Self.notFound(id) }
    let found = try rows.updateUpload(id: id, tenant: tenant, now: now) { row -> Bool in
      if row.record.state.status == .completed { row.record.release() }
      return true
    }
    guard found == true else { throw Self.notFound(id) }
  }

  // MARK: - Internals

  /// Releases the lease or processing claim `token` holds, if it still does. Returns false when
  /// the upload is gone, nil when the index could not be asked (the lease then lapses).
  private func giveBack(_ id: String, tenant: String, token: String) -> Bool? {
    do {
      let found = try rows.updateUpload(id: id, tenant: tenant, now: now) { row -> Bool in
        if row.record.leaseHolder == token { row.record.release() }
        return true
      }
      return found ?? false
    } catch {
      return nil
    }
  }

  private static func notFound(_ id: String) -> StorageError { StorageError(.notFound, "no upload \(id)") }
}

extension LeasedUploadStore {
  /// A writer lease or processing claim held by another instance that the index knows is gone
  /// (its process died) binds no one: it is released now, instead of when it lapses, so the
  /// caller's next attempt takes it. The release happens only if that same token still holds it; should its holder
  /// ever write again, its commit finds the token gone and is refused (pre-empted).
  @discardableResult
  func releaseIfHolderIsGone(id: String, tenant: String) -> Bool {
    guard let row = try? rows.uploadRow(id: id, tenant: tenant, now: now),
      let holder = row.record.leaseHolder,
      let holderInstance = UploadRecord.instance(ofToken: holder), holderInstance != instance,
      !rows.isInstanceAlive(holderInstance)
    else { return false }
    let released = try? rows.updateUpload(id: id, tenant: tenant, now: now) { row -> Bool in
      guard row.record.leaseHolder == holder else { return false }
      row.record.release()
      return true
    }
    return released == true
  }
}
