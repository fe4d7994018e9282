import Foundation
import Synchronization

/// One writer's spool on an `S3UploadStore` upload (`S3UploadBytes`): the part being filled in
/// an unlinked local file, full parts uploaded to the multipart upload as soon as they fill, and
/// at each commit a new tail object with the bytes past the last part, then the offset, the
/// parts and the tail in one conditional statement.
///
/// The local file holds the upload's bytes `[partStart, partStart + fileCount)`, where
/// `partStart` is the end of the committed and pending parts. It is filled lazily: a writer
/// that only settles an upload (opens and closes) downloads nothing; the first write fetches
/// the committed tail.
///
/// `@unchecked Sendable`: every call but `discard` comes with the upload's slot lock held (see
/// `UploadSpool`), which orders all access to the mutable state below.
final class S3UploadSpool: UploadSpool, @unchecked Sendable {
  private let bytes: S3UploadBytes
  private let id: String
  private let token: String
  private let partSize: Int
  private var multipartUploadID: String?
  /// Committed: parts 1…`partsCount` (`partsBytes` bytes), the tail object, the offset.
  private var partsCount: Int
  private var partsBytes: Int
  private var tailKey: String?
  private var committed: Int
  /// Uploaded since the last commit; acknowledged with the next one.
  private var pendingParts: [S3UploadedPart] = []
  private var pendingBytes = 0
  private let file = Mutex<TemporaryFile?>(nil)
  private var fileCount = 0
  private var loaded = false

  init(bytes: S3UploadBytes, row: S3UploadRow, token: String) {
    self.bytes = bytes
    self.id = row.id
    self.token = token
    self.partSize = row.partSize
    self.multipartUploadID = row.multipartUploadID
    self.partsCount = row.partsCount
    self.partsBytes = row.partsBytes
    self.tailKey = row.tailKey
    self.committed = row.record.state.offset
  }

  /// The upload offset of the local file's first byte.
  private var partStart: Int { partsBytes + pendingBytes }

  func write(_ buffer: WriteBuffer, at offset: Int) throws {
    let local = try loadedFile()
    guard offset == partStart + fileCount else {
      throw StorageError(
        .invalidArgument, "upload \(id): write at \(offset), spool ends at \(partStart + fileCount)")
    }
    try buffer.forEachChunk { chunk in
      var rest = chunk
      while !rest.isEmpty {
        let count = min(rest.count, partSize - fileCount)
        try local.write(UnsafeRawBufferPointer(rebasing: rest[0..<count]), at: fileCount)
        fileCount += count
        rest = UnsafeRawBufferPointer(rebasing: rest[count...])
        if fileCount == partSize { try uploadPart(from: local) }
      }
    }
  }

  func commit(from: Int, to: Int, leaseUntil: Date?) throws -> UploadCommit {
    guard to > from else {
      // The lease alone: the committed parts and tail stay as they are.
      return try bytes.index.commitUploadOffset(
        id: id, token: token, from: from, to: to, leaseUntil: leaseUntil, partsCount: partsCount,
        partsBytes: partsBytes, tailKey: tailKey, newParts: [])
    }
    guard from == committed, to == partStart + fileCount, let local = file.withLock({ $0 }) else {
      throw StorageError(.invalidArgument, "upload \(id): commit to \(to) does not match the spool")
    }
    var newTail: String?
    if fileCount > 0 {
      let key = bytes.newTailKey(id)
      try bytes.client.putObject(key, body: .descriptor(local.descriptor, range: 0..<fileCount))
      newTail = key
    }
    let outcome = try bytes.index.commitUploadOffset(
      id: id, token: token, from: from, to: to, leaseUntil: leaseUntil,
      partsCount: partsCount + pendingParts.count,
      partsBytes: partStart, tailKey: newTail, newParts: pendingParts)
    guard case .committed = outcome else {
      // Never acknowledged: nothing refers to the new tail. (Failing here leaves an orphan the
      // sweep removes.)
      if let newTail { try? bytes.client.deleteObject(newTail) }
      return outcome
    }
    let replaced = tailKey
    partsCount += pendingParts.count
    partsBytes = partStart
    pendingParts = []
    pendingBytes = 0
    tailKey = newTail
    committed = to
    if let replaced, replaced != newTail { try? bytes.client.deleteObject(replaced) }
    return outcome
  }

  // Parts past the offset are in the bucket, where the next writer and the sweep find them;
  // the local tail file is dropped with the writer (`discard`).
  func cutBack(to offset: Int) {}

  func discard() {
    file.withLock { $0 = nil }
  }

  // MARK: - Internals

  /// The local file, holding the committed tail once this returns.
  private func loadedFile() throws -> TemporaryFile {
    if let local = file.withLock({ $0 }), loaded { return local }
    let local = try TemporaryFile(directory: bytes.settings.temporaryDirectory)
    let tailBytes = committed - partsBytes
    if tailBytes > 0 {
      guard let tailKey else {
        throw StorageError(.corrupt, "upload \(id) has \(tailBytes) bytes past its parts but no tail object")
      }
      let size = try bytes.download(tailKey, into: local, upload: id)
      guard size == tailBytes else {
        throw StorageError(.corrupt, "upload \(id): tail object holds \(size) of \(tailBytes) bytes")
      }
    }
    fileCount = tailBytes
    loaded = true
    file.withLock { $0 = local }
    return local
  }

  /// Uploads the full local file as the next part; the file is then free for the next one.
  private func uploadPart(from local: TemporaryFile) throws {
    let number = partsCount + pendingParts.count + 1
    // The last number is kept for the tail, which completion uploads as the last part.
    guard number < S3Client.maximumPartCount else {
      throw StorageError(
        .lengthExceeded, "upload \(id) would need more than \(S3Client.maximumPartCount) parts")
    }
    let upload = try multipartUpload()
    let part = try bytes.client.uploadPart(
      upload, number: number, body: .descriptor(local.descriptor, range: 0..<partSize))
    pendingParts.append(part)
    pendingBytes += part.size
    fileCount = 0
  }

  /// The upload's multipart upload, started (and recorded under the lease) on first use.
  private func multipartUpload() throws -> S3MultipartUpload {
    let key = bytes.dataKey(id)
    if let multipartUploadID { return S3MultipartUpload(key: key, uploadId: multipartUploadID) }
    let started = try bytes.client.createMultipartUpload(key)
    guard try bytes.index.setMultipartUpload(id: id, token: token, uploadID: started.uploadId) else {
      try? bytes.client.abortMultipartUpload(started)
      throw StorageError(.preempted, "lease of \(id) lost", offset: committed)
    }
    multipartUploadID = started.uploadId
    return started
  }
}
