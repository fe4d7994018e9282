import Foundation
import Synchronization
import Testing

@testable import Storage

/// What the composed store does when its bytes backend fails it, over the SQLite + spool-file
/// pair (the conformance suite covers the paths where the bytes are there).
@Suite(.timeLimit(.minutes(1))) struct LeasedUploadStoreTests {
  /// The spool files, with a hook run before a completed upload's body is read.
  struct HookedBytes: UploadBytes {
    let files: FileUploadBytes
    let beforeBody: @Sendable (UploadRecord) throws -> Void

    func newRow(_ record: UploadRecord) -> UploadRecord { record }
    func openSpool(for row: UploadRecord, token: String, offset: Int?) throws
      -> (spool: any UploadSpool, upload: UploadState)
    {
      try files.openSpool(for: row, token: token, offset: offset)
    }
    func body(of row: UploadRecord, claim token: String) throws -> any UploadBody {
      try beforeBody(row)
      return try files.body(of: row, claim: token)
    }
    func remove(_ row: UploadRecord) { files.remove(row) }
    func sweep() {}
  }

  private static func open(_ directory: String, beforeBody: @escaping @Sendable (UploadRecord) throws -> Void)
    throws -> LeasedUploadStore<SQLiteIndex, HookedBytes>
  {
    let index = try SQLiteIndex(path: directory + "/index.sqlite")
    let files = try FileUploadBytes(dataDirectory: directory, index: index, syncOffsetCommits: false)
    return LeasedUploadStore(
      rows: index, bytes: HookedBytes(files: files, beforeBody: beforeBody),
      configuration: UploadStoreFactory.testConfiguration, instance: "test", clock: { Date() })
  }

  @Test func aBodyThatCannotBeReadGivesTheClaimBack() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path) { row in
      // The disk lost the spool file of a completed upload.
      _ = try FileSystem.unlink(directory.path + "/uploads/" + row.state.id)
    }
    let upload = try store.create(newUpload(length: 3_000))
    try store.put(upload.id, sampleBytes(3_000, seed: 1), at: 0)
    for _ in 0..<2 {
      // The retry finds the same error, not a claim still held.
      let error = #expect(throws: StorageError.self) { try store.complete(tenant: "acme", id: upload.id) }
      #expect(error?.code == .corrupt)
    }
  }

  @Test func anUploadCancelledWhileItsBodyIsReadIsNotFound() throws {
    let directory = try TemporaryDirectory()
    let cancel = Mutex<(@Sendable (String) throws -> Void)?>(nil)
    let store = try Self.open(directory.path) { row in
      try cancel.withLock { $0 }?(row.state.id)
    }
    cancel.withLock { $0 = { id in _ = try store.cancel(tenant: "acme", id: id) } }
    let upload = try store.create(newUpload(length: 3_000))
    try store.put(upload.id, sampleBytes(3_000, seed: 2), at: 0)
    let error = #expect(throws: StorageError.self) { try store.complete(tenant: "acme", id: upload.id) }
    #expect(error?.code == .notFound)
    #expect(try store.state(tenant: "acme", id: upload.id) == nil)
  }
}
