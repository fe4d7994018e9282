import Crypto
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// What the conformance suite's small uploads do not reach: real 5 MiB parts of a multipart
/// upload, written across nodes and takeovers, assembled at completion; the objects an upload
/// leaves behind when it is processed, cancelled or expired; and leftovers no row owns. Serial:
/// each moves tens of MiB through the servers, which other suites share.
@Suite(.serialized, .timeLimit(.minutes(2))) struct S3UploadStoreTests {
  static let mebibyte = 1 << 20
  /// Buffers of 1 MiB (the default), commits every 2 MiB: a part spans several commits.
  static let configuration = UploadStoreConfiguration(
    writeBufferBytes: mebibyte, commitBytes: 2 * mebibyte, leaseDuration: 30, takeoverTimeout: 20,
    takeoverPollInterval: 0.01)

  /// A store over a fresh schema and prefix of the shared servers (`node` names it in leases).
  static func open(_ directory: TemporaryDirectory, node: String = "a", orphanGrace: TimeInterval = 3_600)
    throws -> S3UploadStore
  {
    let backing = try S3UploadBacking.forDirectory(directory.path)
    return try S3UploadStore(
      client: backing.client, index: PostgresIndex(url: backing.url),
      settings: S3UploadStore.Settings(
        keyPrefix: backing.keyPrefix, temporaryDirectory: directory.path + "/tmp-" + node, node: node,
        orphanGrace: orphanGrace),
      configuration: configuration)
  }

  /// Every key under the store's prefix.
  static func keys(_ store: S3UploadStore) throws -> [String] {
    var keys: [String] = []
    try store.client.forEachObject(prefix: store.settings.keyPrefix) { keys.append($0.key) }
    return keys.sorted()
  }

  static func pendingMultipart(_ store: S3UploadStore) throws -> [S3PendingUpload] {
    try store.client.listMultipartUploads(prefix: store.settings.keyPrefix)
  }

  /// A completed upload's processing claim binds other nodes while its node lives, and is taken
  /// over at once when that node is gone (its liveness session ended), not after the lease.
  @Test func aDeadNodesProcessingClaimIsTakenOverAtOnce() throws {
    let directory = try TemporaryDirectory()
    var nodeA: S3UploadStore? = try Self.open(directory, node: "gone-a")
    let nodeB = try Self.open(directory, node: "b")
    let bytes = sampleBytes(100_000, seed: 9)
    let upload = try #require(nodeA).create(newUpload(length: bytes.count))
    _ = try nodeA?.put(upload.id, bytes[...], at: 0)
    guard case .body = try #require(nodeA).complete(tenant: "acme", id: upload.id) else {
      Issue.record("node A did not claim the upload")
      return
    }
    let alive = Date().addingTimeInterval(10)
    while !nodeB.index.isInstanceAlive("gone-a") && Date() < alive { Thread.sleep(forTimeInterval: 0.05) }
    #expect(throws: StorageError.self) { try nodeB.complete(tenant: "acme", id: upload.id) }
    nodeA = nil
    let gone = Date().addingTimeInterval(10)
    while nodeB.index.isInstanceAlive("gone-a") && Date() < gone { Thread.sleep(forTimeInterval: 0.05) }
    let started = Date()
    guard case .body = try nodeB.complete(tenant: "acme", id: upload.id) else {
      Issue.record("node B did not claim the upload")
      return
    }
    #expect(Date().timeIntervalSince(started) < 2)
    _ = nodeA
  }

  @Test func anUploadOfSeveralPartsWrittenOnTwoNodesIsAssembledWhole() throws {
    let directory = try TemporaryDirectory()
    let nodeA = try Self.open(directory, node: "a")
    let nodeB = try Self.open(directory, node: "b")
    let bytes = sampleBytes(13 * Self.mebibyte + 12_345, seed: 1)
    let upload = try nodeA.create(newUpload(length: bytes.count, maxLength: 64 * Self.mebibyte))
    // A writes past the first part boundary and stops in the middle of the second part.
    let cut = 7 * Self.mebibyte + 999
    try nodeA.put(upload.id, bytes[0..<cut], at: 0)
    let row = try #require(try nodeA.index.uploadRow(id: upload.id, tenant: "acme", now: Date()))
    #expect(row.partsCount == 1 && row.partsBytes == 5 * Self.mebibyte && row.tailKey != nil)
    #expect(row.record.state.offset == cut && row.multipartUploadID != nil)
    // B resumes from the committed tail, fills the second part and leaves a tail of its own.
    let writer = try nodeB.writer(upload.id, offset: cut)
    try writer.write(bytes[cut...], slice: 64 << 10)
    #expect(try writer.close().offset == bytes.count)
    let done = try #require(try nodeB.index.uploadRow(id: upload.id, tenant: "acme", now: Date()))
    #expect(done.partsCount == 2 && done.partsBytes == 10 * Self.mebibyte)
    // Only the data object's parts and the current tail remain: replaced tails were deleted.
    #expect(try Self.keys(nodeA) == [done.tailKey!])
    #expect(try nodeA.completedBytes(upload.id) == bytes)
    let assembled = try #require(try nodeA.index.uploadRow(id: upload.id, tenant: "acme", now: Date()))
    #expect(assembled.assembled)
    // A retried processing reads the assembled object again; the result removes every object.
    try nodeA.abandonProcessing(tenant: "acme", id: upload.id)
    #expect(try nodeB.completedBytes(upload.id) == bytes)
    try nodeB.recordResult(
      tenant: "acme", id: upload.id,
      result: UploadResult(attachmentID: "att_1", response: StoredResponse(status: 201, body: [])))
    #expect(try Self.keys(nodeA) == [])
    #expect(try Self.pendingMultipart(nodeA).isEmpty)
    // The partial parts went to unlinked temporary files: nothing is left on the local disk.
    #expect(directory.files().isEmpty, "\(directory.files())")
  }

  @Test func aTakeoverInTheMiddleOfAPartLosesNothingAcknowledged() throws {
    let directory = try TemporaryDirectory()
    let nodeA = try Self.open(directory, node: "a")
    let nodeB = try Self.open(directory, node: "b")
    let bytes = sampleBytes(11 * Self.mebibyte, seed: 2)
    let upload = try nodeA.create(newUpload(length: bytes.count, maxLength: 64 * Self.mebibyte))
    let stopped = CallCounter()
    let old = try nodeA.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {
      stopped.increment()
    }
    // 6 MiB written out: one part uploaded, 1 MiB in the local part file, 6 MiB pending.
    try old.write(bytes[0..<(6 * Self.mebibyte)], slice: 256 << 10)
    try old.commit()
    try old.write(bytes[(6 * Self.mebibyte)..<(6 * Self.mebibyte + 300_000)], slice: 100_000)
    // B wants it: A commits what it received at its next flush and lets go.
    let taken = Mutex<(any UploadWriter)?>(nil)
    let thief = Thread { taken.withLock { $0 = try? nodeB.writer(upload.id, offset: nil) } }
    thief.start()
    var offset = 6 * Self.mebibyte + 300_000
    while !old.isPreempted && offset < 8 * Self.mebibyte {
      try old.write(bytes[offset..<(offset + 50_000)])
      try old.commit()
      offset += 50_000
      usleep(5_000)
    }
    #expect(old.isPreempted && stopped.count == 1)
    let deadline = Date().addingTimeInterval(20)
    while taken.withLock({ $0 == nil }) && Date() < deadline { usleep(5_000) }
    let new = try #require(taken.withLock { $0 })
    #expect(new.upload.offset == offset)
    try new.write(bytes[offset...], slice: 128 << 10)
    try new.close()
    #expect(try nodeA.completedBytes(upload.id) == bytes)
  }

  @Test func cancelAndExpiryAbortTheMultipartUploadAndDeleteEveryObject() throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock(Date())
    let backing = try S3UploadBacking.forDirectory(directory.path)
    let store = try S3UploadStore(
      client: backing.client, index: PostgresIndex(url: backing.url),
      settings: S3UploadStore.Settings(
        keyPrefix: backing.keyPrefix, temporaryDirectory: directory.path + "/tmp", node: "a"),
      configuration: Self.configuration, now: clock.closure)
    var ids: [String] = []
    for seed in 0..<2 {
      let upload = try store.create(newUpload(length: nil, maxLength: 64 * Self.mebibyte, lifetime: 60))
      try store.put(upload.id, sampleBytes(5 * Self.mebibyte + 1_000, seed: UInt64(10 + seed)), at: 0)
      ids.append(upload.id)
    }
    #expect(try Self.pendingMultipart(store).count == 2)
    #expect(try Self.keys(store).count == 2)  // one tail each
    #expect(try store.cancel(tenant: "acme", id: ids[0]))
    #expect(try Self.pendingMultipart(store).map(\.upload.key) == [store.dataKey(ids[1])])
    #expect(try Self.keys(store).allSatisfy { $0.hasPrefix(store.objectPrefix(ids[1])) })
    clock.advance(by: 60)
    #expect(try store.deleteExpired(limit: 10) == [ids[1]])
    #expect(try Self.pendingMultipart(store).isEmpty)
    #expect(try Self.keys(store).isEmpty)
  }

  @Test func twoNodesSweepingAtOnceDeleteEachExpiredUploadOnce() throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock(Date())
    let backing = try S3UploadBacking.forDirectory(directory.path)
    let nodes = try ["a", "b"].map { node in
      try S3UploadStore(
        client: backing.client, index: PostgresIndex(url: backing.url),
        settings: S3UploadStore.Settings(
          keyPrefix: backing.keyPrefix, temporaryDirectory: directory.path + "/tmp-" + node, node: node),
        configuration: Self.configuration, now: clock.closure)
    }
    var expiring: Set<String> = []
    for seed in 0..<24 {
      let upload = try nodes[seed % 2].create(newUpload(length: 3_000, lifetime: seed < 20 ? 60 : 3_600))
      try nodes[seed % 2].put(upload.id, sampleBytes(2_000, seed: UInt64(seed)), at: 0)
      if seed < 20 { expiring.insert(upload.id) }
    }
    clock.advance(by: 60)
    let deleted = Mutex<[String]>([])
    onThreads(2) { node in
      while let batch = try? nodes[node].deleteExpired(limit: 3), !batch.isEmpty {
        deleted.withLock { $0 += batch }
      }
    }
    let all = deleted.withLock { $0 }
    #expect(all.count == expiring.count && Set(all) == expiring)
    // The four live uploads keep their tails; the expired ones have none left.
    let keys = try Self.keys(nodes[0])
    #expect(keys.count == 4 && !keys.contains { key in expiring.contains { key.contains($0) } })
  }

  @Test func leftoversNoRowOwnsAreRemovedAndLiveObjectsKept() throws {
    let directory = try TemporaryDirectory()
    let store = try Self.open(directory, orphanGrace: 0)
    let bytes = sampleBytes(6 * Self.mebibyte, seed: 20)
    let live = try store.create(newUpload(length: bytes.count, maxLength: 64 * Self.mebibyte))
    try store.put(live.id, bytes[0..<(5 * Self.mebibyte + 10)], at: 0)
    let liveMultipart = try #require(try Self.pendingMultipart(store).first?.upload.uploadId)
    // A node died after starting a multipart upload and a tail for an upload whose row is gone,
    // and another left an old tail of a live upload behind.
    let ghost = SecureRandom.identifier(prefix: "upl_")
    let stray = try store.client.createMultipartUpload(store.dataKey(ghost))
    let leftovers = [store.objectPrefix(ghost) + "tail-0011", store.objectPrefix(live.id) + "tail-old"]
    for key in leftovers {
      try [UInt8(1)].withUnsafeBytes { _ = try store.client.putObject(key, body: .bytes($0)) }
    }
    let unrelated = "not-uploads/" + ghost
    try [UInt8(2)].withUnsafeBytes { _ = try store.client.putObject(unrelated, body: .bytes($0)) }
    let before = try Self.keys(store)
    // Object dates are whole seconds: let them be in the past.
    sleep(1)
    let report = try store.sweepOrphans()
    #expect(report.abortedMultipartUploads == 1 && report.deletedObjects == 2, "\(report)")
    let after = try Self.keys(store)
    #expect(after == before.filter { !leftovers.contains($0) })
    #expect(try Self.pendingMultipart(store).map(\.upload.uploadId) == [liveMultipart])
    #expect(liveMultipart != stray.uploadId)
    #expect(try store.client.headObject(unrelated) != nil)
    try store.client.deleteObject(unrelated)
    // The live upload resumes and completes from what the sweep kept.
    try store.put(live.id, bytes[(5 * Self.mebibyte + 10)...], at: 5 * Self.mebibyte + 10)
    #expect(try store.completedBytes(live.id) == bytes)
  }
}
