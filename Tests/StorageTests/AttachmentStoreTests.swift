import Crypto
import Dispatch
import Foundation
import Storage
import Synchronization
import Testing

/// Makes an `AttachmentStore` over a directory's blobs and one index backend; calling it again on
/// the same directory is a restart (or a second node) over the same blobs and index.
struct StoreBackend: Sendable, Equatable, CustomTestStringConvertible {
  let name: String
  let make: @Sendable (TemporaryDirectory, TestClock, AttachmentStore.Configuration) throws -> AttachmentStore
  var testDescription: String { name }

  static func == (left: StoreBackend, right: StoreBackend) -> Bool { left.name == right.name }

  /// Restarted, the embedded store releases its earlier process's running claims at once.
  var releasesClaimsAtStart: Bool { name == "embedded" }

  static let embedded = StoreBackend(name: "embedded") { directory, clock, configuration in
    try AttachmentStore.embedded(directory: directory.path, configuration: configuration, now: clock.closure)
  }

  static let postgres = StoreBackend(name: "FileBlobStore+PostgresIndex") { directory, clock, configuration in
    // The schema's URL is kept in the directory, so that a second store on it shares the index.
    let file = directory.path + "/postgres-url"
    let url: String
    if let saved = try? String(contentsOfFile: file, encoding: .utf8) {
      url = saved
    } else {
      url = try PostgresTestDatabase.freshURL()
      try Data(url.utf8).write(to: URL(fileURLWithPath: file))
    }
    return try AttachmentStore(
      blobs: FileBlobStore(root: directory.path), index: PostgresIndex(url: url),
      configuration: configuration,
      now: clock.closure)
  }

  static let all = [embedded, postgres]
}

@Suite struct AttachmentStoreTests {
  private func makeStore(
    _ directory: TemporaryDirectory, clock: TestClock, configuration: AttachmentStore.Configuration = .init(),
    backend: StoreBackend = .embedded
  ) throws -> AttachmentStore {
    try backend.make(directory, clock, configuration)
  }

  private func store(
    _ store: AttachmentStore, tenant: String = "acme", seed: UInt64, retention: TimeInterval? = nil
  )
    throws -> AttachmentRecord
  {
    try store.store(
      tenant: tenant, bytes: sampleBytes(10_000, seed: seed), width: 2048, height: 1536, source: sampleSource,
      retention: retention)
  }

  @Test(arguments: StoreBackend.all)
  func storedImageComesBackWithItsRecordAndBytes(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let attachments = try makeStore(directory, clock: clock, backend: backend)
    let bytes = sampleBytes(10_000, seed: 1)
    let record = try store(attachments, seed: 1)
    #expect(SecureRandom.isIdentifier(record.id))
    #expect(record.blob.hex == Hex.encode(SHA256.hash(bytes)))
    #expect(record.bytes == 10_000)
    #expect(record.contentType == "image/jpeg")
    #expect(record.source == sampleSource)
    #expect(record.createdAt == clock.now)
    #expect(record.expiresAt == clock.now.addingTimeInterval(30 * 86_400))
    #expect(try attachments.get(tenant: "acme", id: record.id) == record)
    #expect(try attachments.read(record) == bytes)
    #expect(try attachments.read(record, range: 100..<200) == Array(bytes[100..<200]))
    let path = try #require(attachments.path(for: record))
    #expect(FileManager.default.contents(atPath: path) == Data(bytes))
    // The embedded layout: one index file beside the blob and temp directories.
    #expect(
      FileManager.default.fileExists(atPath: directory.path + "/index.sqlite") == (backend == .embedded))
  }

  @Test(arguments: StoreBackend.all)
  func anotherTenantCanNeitherSeeNorDeleteAnAttachment(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let attachments = try makeStore(directory, clock: TestClock(), backend: backend)
    let record = try store(attachments, tenant: "acme", seed: 2)
    #expect(try attachments.get(tenant: "evil", id: record.id) == nil)
    #expect(
      try attachments.get(tenant: "evil", id: record.id) == attachments.get(tenant: "evil", id: "att_missing")
    )
    #expect(try !attachments.delete(tenant: "evil", id: record.id))
    #expect(try attachments.get(tenant: "acme", id: record.id) == record)
    #expect(try attachments.read(record).count == 10_000)
  }

  @Test(arguments: StoreBackend.all)
  func deleteRemovesAccessAtOnceAndBytesWhenNoRowRefersToThem(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let attachments = try makeStore(directory, clock: TestClock(), backend: backend)
    // The same image uploaded by two tenants: two records, one blob.
    let first = try store(attachments, tenant: "acme", seed: 3)
    let second = try store(attachments, tenant: "beta", seed: 3)
    #expect(first.id != second.id)
    #expect(first.blob == second.blob)
    #expect(directory.files(under: "blobs").count == 1)

    #expect(try attachments.delete(tenant: "acme", id: first.id))
    #expect(try attachments.get(tenant: "acme", id: first.id) == nil)
    #expect(try !attachments.delete(tenant: "acme", id: first.id))
    // Still referred to by beta's record.
    #expect(try attachments.read(second).count == 10_000)

    #expect(try attachments.delete(tenant: "beta", id: second.id))
    #expect(try !attachments.blobs.exists(second.blob))
    #expect(directory.files(under: "blobs").isEmpty)
  }

  @Test(arguments: StoreBackend.all)
  func retentionComesFromTheCallThenTheTenantThenTheDefault(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let attachments = try makeStore(
      directory, clock: clock, configuration: .init(defaultRetention: 1_000), backend: backend)
    try attachments.setRetention(500, tenant: "short")
    #expect(try store(attachments, tenant: "acme", seed: 4).expiresAt == clock.now.addingTimeInterval(1_000))
    #expect(try store(attachments, tenant: "short", seed: 4).expiresAt == clock.now.addingTimeInterval(500))
    #expect(
      try store(attachments, tenant: "short", seed: 4, retention: 60).expiresAt
        == clock.now.addingTimeInterval(60))
  }

  @Test(arguments: StoreBackend.all)
  func expiredAttachmentVanishesAtOnceAndTheSweeperRemovesRowAndBytes(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock(Date())
    let attachments = try makeStore(directory, clock: clock, backend: backend)
    let short = try store(attachments, seed: 5, retention: 60)
    let long = try store(attachments, seed: 6, retention: 3_600)
    let sharedLong = try store(attachments, tenant: "beta", seed: 5, retention: 3_600)

    clock.advance(by: 61)
    #expect(try attachments.get(tenant: "acme", id: short.id) == nil)
    #expect(try attachments.get(tenant: "acme", id: long.id) == long)
    var report = try attachments.sweep()
    #expect(report.expiredAttachments == 1)
    // The expired row's blob is still shared with beta's live record.
    #expect(report.deletedBlobs == 0)
    #expect(try attachments.read(sharedLong).count == 10_000)

    clock.advance(by: 3_600)
    report = try attachments.sweep()
    #expect(report.expiredAttachments == 2)
    #expect(report.deletedBlobs == 2)
    #expect(report.deletedBlobBytes == 20_000)
    #expect(directory.files(under: "blobs").isEmpty)
    #expect(try attachments.statistics().attachments == 0)
  }

  @Test(arguments: StoreBackend.all)
  func unreferencedBlobFromACrashIsSweptOnlyAfterTheGracePeriod(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock(Date())
    let bytes = sampleBytes(4_000, seed: 7)
    do {
      // A process that wrote the blob and died before the index row.
      let blobs = try FileBlobStore(root: directory.path)
      _ = try blobs.put(bytes)
    }
    let attachments = try makeStore(
      directory, clock: clock, configuration: .init(sweepGrace: 600), backend: backend)
    let live = try store(attachments, seed: 8)
    #expect(try attachments.sweep().deletedBlobs == 0)
    #expect(try attachments.blobs.exists(BlobHash.of(bytes)))

    clock.advance(by: 601)
    let report = try attachments.sweep()
    #expect(report.deletedBlobs == 1)
    #expect(report.deletedBlobBytes == 4_000)
    #expect(try !attachments.blobs.exists(BlobHash.of(bytes)))
    #expect(try attachments.read(live).count == 10_000)
  }

  @Test(arguments: StoreBackend.all)
  func sweepingPurgesIdempotencyKeysAfterTheirLifetime(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let attachments = try makeStore(directory, clock: clock, backend: backend)
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "k", fingerprint: "f") == .started)
    clock.advance(by: 86_401)
    #expect(try attachments.sweep().purgedIdempotencyKeys == 1)
    #expect(try attachments.statistics().idempotencyKeys == 0)
  }

  @Test(arguments: StoreBackend.all)
  func idempotentRetryGetsTheFirstAnswerAndADeadClaimFreesItsKey(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    var attachments = try makeStore(directory, clock: clock, backend: backend)
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "a", fingerprint: "f") == .started)
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "a", fingerprint: "f") == .inProgress)
    let answer = StoredResponse(
      status: 201, headers: ["Location": "/v1/attachments/att_1"], body: [123, 125])
    try attachments.completeIdempotent(tenant: "acme", key: "a", response: answer)
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "a", fingerprint: "f") == .completed(answer))
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "b", fingerprint: "f") == .started)
    try attachments.abandonIdempotent(tenant: "acme", key: "b")
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "b", fingerprint: "f") == .started)

    // kill -9 with "b" running: the next process must not answer 409 for 24 hours. The embedded
    // store knows no other process can be running it and frees the key at start; a shared
    // index cannot know that (another node may be), so the key is free once the lease passes.
    attachments = try makeStore(directory, clock: clock, backend: backend)
    if !backend.releasesClaimsAtStart {
      #expect(try attachments.beginIdempotent(tenant: "acme", key: "b", fingerprint: "f") == .inProgress)
      clock.advance(by: attachments.configuration.idempotencyLease)
    }
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "b", fingerprint: "f") == .started)
    #expect(try attachments.beginIdempotent(tenant: "acme", key: "a", fingerprint: "f") == .completed(answer))
  }

  @Test(arguments: StoreBackend.all)
  func writabilityReflectsTheDisk(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let attachments = try makeStore(directory, clock: TestClock(), backend: backend)
    #expect(attachments.isWritable())
    try FileManager.default.removeItem(atPath: directory.path + "/tmp")
    #expect(!attachments.isWritable())
    #expect(throws: StorageError.self) { try attachments.checkWritable() }
  }

  @Test(arguments: StoreBackend.all)
  func sixteenConcurrentStoresAllLandAndReadBack(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let attachments = try makeStore(directory, clock: TestClock(), backend: backend)
    let results = Mutex<[(record: AttachmentRecord, seed: UInt64)]>([])
    let failures = Failures()
    onThreads(16) { worker in
      do {
        for round in 0..<4 {
          // Workers 0…3 share content, so dedup races with distinct writes.
          let seed = UInt64(worker < 4 ? 1_000 + round : worker * 10 + round)
          let record = try store(attachments, tenant: "t\(worker % 3)", seed: seed)
          results.withLock { $0.append((record, seed)) }
        }
      } catch {
        failures.add("worker \(worker): \(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    let stored = results.withLock { $0 }
    #expect(stored.count == 64)
    #expect(Set(stored.map(\.record.id)).count == 64)
    for (record, seed) in stored {
      #expect(try attachments.get(tenant: record.tenant, id: record.id) == record)
      #expect(try attachments.read(record) == sampleBytes(10_000, seed: seed))
    }
    #expect(try attachments.statistics().blobs == 4 + 12 * 4)
  }

  @Test(arguments: StoreBackend.all)
  func concurrentStoresDeletesAndSweepsNeverLeaveARowWithoutItsBlob(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock(Date().addingTimeInterval(10_000))  // every blob is past the grace period
    let attachments = try makeStore(
      directory, clock: clock, configuration: .init(sweepGrace: 1), backend: backend)
    let failures = Failures()
    // Every worker stores and deletes the same two images, so a store's deduplicated blob is
    // constantly the last reference someone else's delete (or the sweeper) wants to remove.
    onThreads(8) { worker in
      for round in 0..<40 {
        do {
          let record = try store(attachments, tenant: "t\(worker)", seed: UInt64(round % 2))
          if try attachments.read(record).count != 10_000 { failures.add("short blob for \(record.id)") }
          if worker == 0 && round % 4 == 0 { _ = try attachments.sweep() }
          try attachments.delete(tenant: record.tenant, id: record.id)
        } catch {
          failures.add("worker \(worker) round \(round): \(error)")
        }
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
    #expect(try attachments.statistics().attachments == 0)
    #expect(directory.files(under: "blobs").isEmpty)
  }

  @Test(.timeLimit(.minutes(2)), arguments: StoreBackend.all)
  func twoNodesStoringDeletingAndSweepingNeverLeaveARowWithoutItsBlob(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock(Date().addingTimeInterval(10_000))  // every blob is past the grace period
    let configuration = AttachmentStore.Configuration(sweepGrace: 1)
    // Two stores over the same blob directory and index: two nodes behind a load balancer.
    let nodes = [
      try makeStore(directory, clock: clock, configuration: configuration, backend: backend),
      try makeStore(directory, clock: clock, configuration: configuration, backend: backend),
    ]
    let failures = Failures()
    // Node B sweeps (and deletes) the very images node A is storing, and the other way round.
    onThreads(8) { worker in
      let node = nodes[worker % 2]
      for round in 0..<30 {
        do {
          let record = try store(node, tenant: "t\(worker)", seed: UInt64(round % 2))
          if try nodes[(worker + 1) % 2].read(record).count != 10_000 {
            failures.add("short blob for \(record.id)")
          }
          if worker < 2 && round % 3 == 0 { _ = try node.sweep() }
          try nodes[(worker + 1) % 2].delete(tenant: record.tenant, id: record.id)
        } catch {
          failures.add("worker \(worker) round \(round): \(error)")
        }
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all.prefix(3))")
    #expect(try nodes[0].statistics().attachments == 0)
    #expect(directory.files(under: "blobs").isEmpty)
    #expect(try nodes[1].index.unreferencedBlobs(now: clock.now, limit: 10).isEmpty)
  }

  @Test func invalidConfigurationIsRejected() throws {
    let directory = try TemporaryDirectory()
    #expect(throws: StorageError.self) {
      try AttachmentStore.embedded(directory: directory.path, configuration: .init(defaultRetention: 0))
    }
  }
}
