import Foundation

extension S3UploadStore {
  public func openWriter(
    tenant: String, id: String, offset: Int?, length: Int?, onPreempted: @escaping @Sendable () -> Void
  ) throws -> any UploadWriter {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let token = UploadRecord.newToken(instance: instance)
    return try slots.takingOver(id, configuration: configuration) { holder -> BufferedUploadWriter? in
      let now = self.now
      let expiry = now.addingTimeInterval(configuration.leaseDuration)
      let taken = try index.updateUploadRow(id: id, tenant: tenant, now: now) { row -> S3UploadRow? in
        let attempt = try row.record.takeWriterLease(
          token: token, instance: instance, now: now, until: expiry, offset: offset, length: length)
        return attempt == .acquired ? row : nil
      }
      guard let taken else { throw StorageError(.notFound, "no upload \(id)") }
      guard let row = taken else { return nil }
      let writer = BufferedUploadWriter(
        slots: slots, spool: S3UploadSpool(store: self, row: row, token: token), configuration: configuration,
        clock: clock, upload: row.record.state, token: token, leaseExpiresAt: expiry, onPreempted: onPreempted
      )
      holder.writer = writer
      return writer
    }
  }

  @discardableResult
  public func setLength(tenant: String, id: String, length: Int) throws -> UploadState {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    return try slots.takingOver(id, configuration: configuration) { _ -> UploadState? in
      let now = self.now
      let outcome = try index.updateUploadRow(id: id, tenant: tenant, now: now) { row -> UploadState? in
        if row.record.leaseBinds(now: now, instance: instance) {
          row.record.leaseWanted = true
          return nil
        }
        try row.record.declare(length: length)
        return row.record.state
      }
      guard let outcome else { throw StorageError(.notFound, "no upload \(id)") }
      return outcome
    }
  }

  public func complete(tenant: String, id: String) throws -> UploadCompletion {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let token = UploadRecord.newToken(instance: instance)
    let claimed = try slots.takingOver(id, configuration: configuration) { _ -> S3UploadRow? in
      let now = self.now
      let expiry = now.addingTimeInterval(configuration.leaseDuration)
      let claimed = try index.updateUploadRow(id: id, tenant: tenant, now: now) { row -> S3UploadRow? in
        let attempt = try row.record.claimProcessing(
          token: token, instance: instance, now: now, until: expiry)
        return attempt == .acquired ? row : nil
      }
      guard let claimed else { throw StorageError(.notFound, "no upload \(id)") }
      return claimed
    }
    let upload = claimed.record.state
    if upload.status == .processed { return .processed(upload) }
    // The object-store work runs outside the slot lock: the processing claim keeps other
    // requests out meanwhile.
    do {
      return .body(try body(of: claimed, claim: token), upload)
    } catch {
      // Give the claim back: a retry should find the same error, not a claim held for a minute.
      _ = try? index.updateUploadRow(id: id, tenant: tenant, now: now) { row in
        if row.record.leaseHolder == token { row.record.release() }
      }
      throw error
    }
  }

  @discardableResult
  public func recordResult(tenant: String, id: String, result: UploadResult) throws -> UploadState {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let recorded = try slots.withLock(id) { _ in
      try index.updateUploadRow(id: id, tenant: tenant, now: now) { row in
        try row.record.record(result)
        return row
      }
    }
    guard let recorded else { throw StorageError(.notFound, "no upload \(id)") }
    // The body is stored as an attachment now; its objects are dead weight.
    removeObjects(id, multipartUploadID: recorded.assembled ? nil : recorded.multipartUploadID)
    return recorded.record.state
  }

  public func abandonProcessing(tenant: String, id: String) throws {
    guard Self.isUploadID(id) else { throw StorageError(.notFound, "no upload \(id)") }
    let found = try index.updateUploadRow(id: id, tenant: tenant, now: now) { row -> Bool in
      if row.record.state.status == .completed { row.record.release() }
      return true
    }
    guard found == true else { throw StorageError(.notFound, "no upload \(id)") }
  }

  // MARK: - Completion

  /// The completed upload's bytes in a mapped temporary file: its tail object alone when it has
  /// no parts, else the data object (assembled first unless an earlier claim did).
  private func body(of row: S3UploadRow, claim token: String) throws -> any UploadBody {
    let id = row.id
    let length = row.record.state.length ?? row.record.state.offset
    guard length > 0 else { return try MappedUploadBody(descriptor: -1, length: 0, label: id) }
    let key: String
    if row.partsCount == 0 {
      guard let tail = row.tailKey, row.partsBytes == 0 else {
        throw StorageError(.corrupt, "upload \(id) has \(length) bytes but no tail object")
      }
      key = tail
    } else {
      if !row.assembled { try assemble(row, length: length, claim: token) }
      key = dataKey(id)
    }
    let file = try TemporaryFile(directory: settings.temporaryDirectory)
    let size = try download(key, into: file, upload: id)
    guard size == length else {
      throw StorageError(.corrupt, "upload \(id): \(key) holds \(size) of \(length) bytes")
    }
    return try MappedUploadBody(descriptor: file.descriptor, length: length, label: file.label)
  }

  /// Uploads the tail as the last part and completes the multipart upload into the data object.
  private func assemble(_ row: S3UploadRow, length: Int, claim token: String) throws {
    let id = row.id
    guard let uploadID = row.multipartUploadID else {
      throw StorageError(.corrupt, "upload \(id) has parts but no multipart upload")
    }
    let upload = S3MultipartUpload(key: dataKey(id), uploadId: uploadID)
    var parts = try index.uploadParts(id: id)
    guard parts.count == row.partsCount, parts.map(\.number) == Array(1...row.partsCount),
      parts.reduce(0, { $0 + $1.size }) == row.partsBytes
    else { throw StorageError(.corrupt, "upload \(id): its parts do not match its row") }
    if length > row.partsBytes {
      guard let tail = row.tailKey else {
        throw StorageError(.corrupt, "upload \(id) has bytes past its parts but no tail object")
      }
      let file = try TemporaryFile(directory: settings.temporaryDirectory)
      let size = try download(tail, into: file, upload: id)
      guard size == length - row.partsBytes else {
        throw StorageError(
          .corrupt, "upload \(id): tail object holds \(size) of \(length - row.partsBytes) bytes")
      }
      parts.append(
        try client.uploadPart(
          upload, number: row.partsCount + 1, body: .descriptor(file.descriptor, range: 0..<size)))
    }
    do {
      try client.completeMultipartUpload(upload, parts: parts)
    } catch let error as StorageError where error.code == .notFound {
      // Completed already: an attempt whose answer was lost, or an earlier claim that died
      // before it could record it. The object tells.
      guard let info = try client.headObject(upload.key), info.size == length else { throw error }
    }
    // A claim lost meanwhile changes nothing here: the next claimant finds the object.
    _ = try index.markUploadAssembled(id: id, token: token)
  }

  /// Streams the object into `file` from its start; returns how many bytes it held.
  func download(_ key: String, into file: TemporaryFile, upload id: String) throws -> Int {
    var written = 0
    do {
      try client.getObject(key) { chunk in
        try file.write(chunk, at: written)
        written += chunk.count
      }
    } catch let error as StorageError where error.code == .notFound {
      throw StorageError(.corrupt, "upload \(id): object \(key) is missing")
    }
    return written
  }
}
