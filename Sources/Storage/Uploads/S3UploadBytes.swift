private import Crypto
import Foundation
import Synchronization

/// Upload bytes in an S3-compatible bucket, under `<keyPrefix><id>/`: the bytes backend of
/// `S3UploadStore` (which says how parts and tail objects are cut). What it keeps per upload
/// (part size, multipart upload, committed parts, tail object) is in the upload's PostgreSQL
/// row, an `S3UploadRow`.
final class S3UploadBytes: UploadBytes {
  let client: S3Client
  /// The index holding the rows, for the statements on this backend's columns.
  let index: PostgresIndex
  let settings: S3UploadStore.Settings
  let clock: @Sendable () -> Date
  let lastOrphanSweepTime: Mutex<Date>

  /// Bytes in `client`'s bucket as `settings` cut them; makes the temporary directory.
  init(
    client: S3Client, index: PostgresIndex, settings: S3UploadStore.Settings,
    now: @escaping @Sendable () -> Date
  ) throws {
    self.client = client
    self.index = index
    self.settings = settings
    self.clock = now
    self.lastOrphanSweepTime = Mutex(now())
    try FileManager.default.createDirectory(
      atPath: settings.temporaryDirectory, withIntermediateDirectories: true)
  }

  /// The current time by the injected clock.
  var now: Date { clock() }

  func objectPrefix(_ id: String) -> String { settings.keyPrefix + id + "/" }
  func dataKey(_ id: String) -> String { objectPrefix(id) + "data" }
  func newTailKey(_ id: String) -> String { objectPrefix(id) + "tail-" + Hex.encode(SecureRandom.bytes(8)) }

  /// The part size of an upload that may hold `maxLength` bytes.
  func partSize(forMaximum maxLength: Int) -> Int {
    let mebibyte = 1 << 20
    let needed = (maxLength + S3Client.maximumPartCount - 2) / (S3Client.maximumPartCount - 1)
    return max(settings.partSize, (needed + mebibyte - 1) / mebibyte * mebibyte)
  }

  func newRow(_ record: UploadRecord) throws -> S3UploadRow {
    let partSize = self.partSize(forMaximum: record.state.maxLength)
    guard partSize <= S3Client.maximumPartSize else {
      throw StorageError(.invalidArgument, "upload maximum \(record.state.maxLength) needs parts over 5 GiB")
    }
    return S3UploadRow(
      record: record, partSize: partSize, multipartUploadID: nil, partsCount: 0, partsBytes: 0, tailKey: nil,
      assembled: false)
  }

  func openSpool(for row: S3UploadRow, token: String, offset: Int?) -> (
    spool: any UploadSpool, upload: UploadState
  ) {
    (S3UploadSpool(bytes: self, row: row, token: token), row.record.state)
  }

  /// Aborts the upload's multipart upload (unless assembled: then it is the data object) and
  /// deletes its objects.
  func remove(_ row: S3UploadRow) {
    if let uploadID = row.multipartUploadID, !row.assembled {
      try? client.abortMultipartUpload(S3MultipartUpload(key: dataKey(row.id), uploadId: uploadID))
    }
    try? client.forEachObject(prefix: objectPrefix(row.id)) { object in try? client.deleteObject(object.key) }
  }

  // MARK: - Completion

  /// The completed upload's bytes in a mapped temporary file: its tail object alone when it has
  /// no parts, else the data object (assembled first unless an earlier claim did).
  func body(of row: S3UploadRow, claim token: String) throws -> any UploadBody {
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
