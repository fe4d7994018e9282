import Foundation

extension S3UploadBytes {
  /// Runs `sweepOrphans` when `orphanSweepInterval` has passed (by the store's clock) since the
  /// last one (or since the store was opened).
  func sweep() throws {
    guard lastOrphanSweepDue(at: now) else { return }
    try sweepOrphans()
  }

  private func lastOrphanSweepDue(at current: Date) -> Bool {
    lastOrphanSweepTime.withLock { last in
      guard current.timeIntervalSince(last) >= settings.orphanSweepInterval else { return false }
      last = current
      return true
    }
  }

  /// Aborts the multipart uploads and deletes the objects under the key prefix that no upload
  /// row owns, once older than `orphanGrace` by the object store's own dates: a node that died
  /// between an S3 call and its row (a started multipart upload, a tail object never
  /// committed), a removal that failed, tails replaced by a commit whose delete failed.
  ///
  /// Safe on several nodes at once: what it removes is unreachable by every row, and anything
  /// younger than the grace (a tail PUT whose commit is under way) is left alone.
  @discardableResult
  func sweepOrphans() throws -> S3UploadStore.OrphanReport {
    var report = S3UploadStore.OrphanReport()
    // The object store's clock dates its objects: compare with the wall clock, not the
    // store's injected one.
    let cutoff = Date().addingTimeInterval(-settings.orphanGrace)
    let prefix = settings.keyPrefix
    let pending = try client.listMultipartUploads(prefix: prefix).filter { $0.initiated < cutoff }
    for batch in stride(from: 0, to: pending.count, by: 500).map({
      pending[$0..<min($0 + 500, pending.count)]
    }) {
      let rows = try index.uploadObjects(ids: batch.compactMap { uploadID(inKey: $0.upload.key) })
      for entry in batch {
        let owner = uploadID(inKey: entry.upload.key).flatMap { rows[$0] }
        guard owner?.multipartUploadID != entry.upload.uploadId else { continue }
        try client.abortMultipartUpload(entry.upload)
        report.abortedMultipartUploads += 1
      }
    }
    var page: [S3ObjectInfo] = []
    func judge() throws {
      let rows = try index.uploadObjects(ids: Array(Set(page.compactMap { uploadID(inKey: $0.key) })))
      for object in page {
        let id = uploadID(inKey: object.key)
        // A row's objects are its data object and its current tail, nothing else.
        let owned =
          id.flatMap { id in rows[id].map { object.key == dataKey(id) || object.key == $0.tailKey } }
          ?? false
        if !owned {
          try client.deleteObject(object.key)
          report.deletedObjects += 1
        }
      }
      page.removeAll(keepingCapacity: true)
    }
    try client.forEachObject(prefix: prefix) { object in
      guard object.lastModified < cutoff else { return }
      page.append(object)
      if page.count >= 500 { try judge() }
    }
    try judge()
    return report
  }

  /// The upload id of a key `<prefix><id>/…`, or nil for a key of another shape.
  private func uploadID(inKey key: String) -> String? {
    guard key.hasPrefix(settings.keyPrefix) else { return nil }
    let rest = key.dropFirst(settings.keyPrefix.count)
    guard let slash = rest.firstIndex(of: "/") else { return nil }
    let id = String(rest[..<slash])
    return UploadRecord.isID(id) ? id : nil
  }
}
