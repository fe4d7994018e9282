import Crypto
import Foundation
import Glibc
import Testing

@testable import Storage

/// What only the file store has: spool files, their repair on opening, the mapping, the slots.
@Suite(.timeLimit(.minutes(1))) struct FileUploadStoreTests {
  private static func open(_ directory: String, clock: TestClock = TestClock()) throws -> FileUploadStore {
    try FileUploadStore(
      dataDirectory: directory, index: SQLiteIndex(path: directory + "/index.sqlite"),
      configuration: UploadStoreFactory.testConfiguration, now: clock.closure)
  }

  private static func size(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
  }

  @Test func spoolFileIsPrivateNamedByTheIdAndHoldsExactlyTheCommittedBytes() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path)
    let upload = try store.create(newUpload(length: 10_000))
    // Nothing on disk before the first writer.
    #expect(directory.files(under: "uploads").isEmpty)
    let writer = try store.writer(upload.id, offset: 0)
    try writer.write(sampleBytes(5_000, seed: 1))
    let path = directory.path + "/uploads/" + upload.id
    #expect(store.spoolPath(upload.id) == path)
    #expect(Self.size(path) == 5_000)
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    #expect((attributes[.posixPermissions] as? Int) == 0o600)
    _ = try sampleBytes(100, seed: 2).withUnsafeBytes { try writer.append($0) }
    #expect(Self.size(path) == 5_000)  // buffered bytes are not in the file yet
    try writer.close()
    #expect(Self.size(path) == 5_100)
  }

  @Test func offsetCommitsLeaveTheSharedIndexConnectionFullySynced() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path)
    let upload = try store.create(newUpload(length: 10_000))
    let writer = try store.writer(upload.id, offset: 0)
    try writer.write(sampleBytes(9_000, seed: 11))
    #expect(try writer.commit().offset == 9_000)
    // The attachment index shares the connection: it must be back to FULL after each commit.
    #expect(try store.index.write { try $0.query("PRAGMA synchronous") }.first?.first?.integer == 2)
    try writer.close()
    #expect(try store.index.write { try $0.query("PRAGMA synchronous") }.first?.first?.integer == 2)
  }

  @Test func recordingTheResultRemovesTheSpoolFileAndCancelRemovesItToo() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path)
    let processed = try store.create(newUpload(length: 3_000))
    try store.put(processed.id, sampleBytes(3_000, seed: 3), at: 0)
    guard case .body(let body, _) = try store.complete(tenant: "acme", id: processed.id) else {
      Issue.record("no body")
      return
    }
    try store.recordResult(
      tenant: "acme", id: processed.id,
      result: UploadResult(attachmentID: "att_1", response: StoredResponse(status: 201, body: [])))
    #expect(directory.files(under: "uploads").isEmpty)
    // The mapping outlives the file: the pipeline may still be reading it.
    #expect(body.withUnsafeBytes { Array($0) } == sampleBytes(3_000, seed: 3))

    let cancelled = try store.create(newUpload(length: 3_000))
    try store.put(cancelled.id, sampleBytes(1_000, seed: 4), at: 0)
    #expect(directory.files(under: "uploads") == [cancelled.id])
    try store.cancel(tenant: "acme", id: cancelled.id)
    #expect(directory.files(under: "uploads").isEmpty)
  }

  @Test func expiryDeletesSpoolFilesWithTheirUploads() throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let store = try Self.open(directory.path, clock: clock)
    for seed in 0..<5 {
      let upload = try store.create(newUpload(length: 2_000, lifetime: 10))
      try store.put(upload.id, sampleBytes(1_000, seed: UInt64(seed)), at: 0)
    }
    #expect(directory.files(under: "uploads").count == 5)
    clock.advance(by: 10)
    #expect(try store.deleteAllExpired(batch: 2) == 5)
    #expect(directory.files(under: "uploads").isEmpty)
  }

  @Test func openingCutsUnacknowledgedBytesRemovesStrayFilesAndReleasesLeases() throws {
    let directory = try TemporaryDirectory()
    let uploads = directory.path + "/uploads/"
    let bytes = sampleBytes(8_000, seed: 5)
    let (receiving, processed, completed): (String, String, String)
    do {
      let store = try Self.open(directory.path)
      receiving = try store.create(newUpload(length: bytes.count)).id
      try store.put(receiving, bytes[0..<6_000], at: 0)
      completed = try store.create(newUpload(length: 100)).id
      try store.put(completed, bytes[0..<100], at: 0)
      _ = try store.complete(tenant: "acme", id: completed)
      processed = try store.create(newUpload(length: 100)).id
      try store.put(processed, bytes[0..<100], at: 0)
      _ = try store.complete(tenant: "acme", id: processed)
      try store.recordResult(
        tenant: "acme", id: processed,
        result: UploadResult(attachmentID: nil, response: .init(status: 422, body: [])))
      // Held, as a writer cut off by a crash would hold it.
      _ = try store.writer(receiving, offset: 6_000)
    }
    // What a crash leaves: bytes written past the commit, files whose rows are gone or done.
    try Data(bytes[0..<7_000]).write(to: URL(fileURLWithPath: uploads + receiving))
    try Data(bytes[0..<150]).write(to: URL(fileURLWithPath: uploads + completed))
    try Data([1, 2, 3]).write(to: URL(fileURLWithPath: uploads + processed))
    let orphan = SecureRandom.identifier(prefix: "upl_")
    for name in [orphan, "notes.txt"] { try Data([0]).write(to: URL(fileURLWithPath: uploads + name)) }

    let store = try Self.open(directory.path)
    #expect(store.recovery.removedFiles == 3 && store.recovery.truncatedFiles == 2)
    #expect(store.recovery.loweredOffsets == 0 && store.recovery.releasedLeases == 2)
    #expect(directory.files(under: "uploads").sorted() == [completed, receiving].sorted())
    #expect(Self.size(uploads + receiving) == 6_000 && Self.size(uploads + completed) == 100)
    // The lease of the dead process does not block the resume, nor the completed upload's claim.
    try store.put(receiving, bytes[6_000...], at: 6_000)
    #expect(try store.completedBytes(receiving) == bytes)
    #expect(try store.completedBytes(completed) == Array(bytes[0..<100]))
  }

  @Test func spoolFileShorterThanItsOffsetLowersTheOffsetToWhatIsThere() throws {
    let directory = try TemporaryDirectory()
    let uploads = directory.path + "/uploads/"
    let bytes = sampleBytes(9_000, seed: 6)
    let (short, missing): (String, String)
    do {
      let store = try Self.open(directory.path)
      short = try store.create(newUpload(length: bytes.count)).id
      try store.put(short, bytes[0..<5_000], at: 0)
      missing = try store.create(newUpload(length: bytes.count)).id
      try store.put(missing, bytes[0..<5_000], at: 0)
    }
    // A disk that lost acknowledged bytes (it should never happen; clients must resend, not skip).
    try Data(bytes[0..<3_000]).write(to: URL(fileURLWithPath: uploads + short))
    try FileManager.default.removeItem(atPath: uploads + missing)
    let store = try Self.open(directory.path)
    #expect(store.recovery.loweredOffsets == 2)
    #expect(try store.state(tenant: "acme", id: short)?.offset == 3_000)
    #expect(try store.state(tenant: "acme", id: missing)?.offset == 0)
    try store.put(short, bytes[3_000...], at: 3_000)
    #expect(try store.completedBytes(short) == bytes)
  }

  @Test func writerHoldsAtMostItsBufferAndOneSliceBeforeItMustFlush() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path)
    let capacity = UploadStoreFactory.testConfiguration.writeBufferBytes
    let upload = try store.create(newUpload(length: nil))
    let writer = try store.writer(upload.id, offset: 0)
    let slice = sampleBytes(1_500, seed: 7)
    var outcome = AppendOutcome.buffered
    while outcome == .buffered { outcome = try slice.withUnsafeBytes { try writer.append($0) } }
    #expect(writer.receivedOffset > capacity && writer.receivedOffset <= capacity + slice.count)
    let refused = #expect(throws: StorageError.self) { try slice.withUnsafeBytes { try writer.append($0) } }
    #expect(refused?.code == .invalidArgument)
    // A flush frees the buffer (the bytes go to the file) without acknowledging them yet.
    let held = writer.receivedOffset
    #expect(try writer.flush().offset == 0 && writer.receivedOffset == held)
    #expect(try slice.withUnsafeBytes { try writer.append($0) } == .buffered)
    #expect(try writer.commit().offset == held + slice.count)
    // A small upload gets a buffer no larger than it can still take.
    let small = try store.create(newUpload(length: 10))
    let tiny = try store.writer(small.id, offset: 0)
    #expect(try sampleBytes(10, seed: 8).withUnsafeBytes { try tiny.append($0) } == .flushNeeded)
  }

  @Test func slotsAreGivenBackWhetherWritersCloseAreTakenOverOrAreDropped() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path)
    let upload = try store.create(newUpload(length: 100_000))
    do {
      let dropped = try store.writer(upload.id, offset: 0)
      _ = try [UInt8(1)].withUnsafeBytes { try dropped.append($0) }
      #expect(store.slots.count == 1)
    }
    #expect(store.slots.count == 0)
    let first = try store.writer(upload.id, offset: 0)
    let second = try store.writer(upload.id, offset: 0)
    #expect(first.isPreempted && store.slots.count == 1)
    try second.close()
    #expect(store.slots.count == 0)
    try store.put(upload.id, sampleBytes(100_000, seed: 9), at: 0)
    _ = try store.complete(tenant: "acme", id: upload.id)
    #expect(store.slots.count == 0)
  }

  @Test func aCompletedBodyIsTheSpoolFileMappedNotCopied() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory.path)
    let bytes = sampleBytes(50_000, seed: 10)
    let upload = try store.create(newUpload(length: bytes.count))
    try store.put(upload.id, bytes, at: 0)
    guard case .body(let body, _) = try store.complete(tenant: "acme", id: upload.id) else {
      Issue.record("no body")
      return
    }
    #expect(body is MappedUploadBody)
    #expect(body.count == bytes.count && body.withUnsafeBytes { Array($0) } == bytes)
    // The pages are the file's own: a byte changed in the file through another descriptor
    // shows through the body (a copy would still hold the old one).
    let path = store.spoolPath(upload.id)
    let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
    try #require(fd >= 0)
    defer { Glibc.close(fd) }
    let changed = bytes[1_234] ^ 0xFF
    #expect([changed].withUnsafeBytes { pwrite(fd, $0.baseAddress, 1, 1_234) } == 1)
    #expect(body.withUnsafeBytes { $0[1_234] } == changed)
  }
}
