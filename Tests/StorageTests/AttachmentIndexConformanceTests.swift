import Dispatch
import Foundation
import Storage
import Testing

let t0 = Date(timeIntervalSince1970: 1_800_000_000)

func record(
  _ id: String, tenant: String = "acme", blobSeed: UInt64 = 1, bytes: Int = 1_000, created: Date = t0,
  lifetime: TimeInterval = 86_400, source: SourceInfo = sampleSource, owner: String? = nil
) -> AttachmentRecord {
  AttachmentRecord(
    id: id, tenant: tenant, blob: BlobHash.of(sampleBytes(8, seed: blobSeed)), contentType: "image/jpeg",
    width: 2048, height: 1536, bytes: bytes, source: source, createdAt: created,
    expiresAt: created.addingTimeInterval(lifetime), owner: owner)
}

@Suite struct AttachmentIndexConformanceTests {
  @Test(arguments: IndexFactory.all)
  func insertedRecordReadsBackEqual(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let full = record("att_1")
    let bare = record(
      "att_2", source: SourceInfo(format: "png", width: 10, height: 20, bytes: 300))
    try index.insert(full)
    try index.insert(bare)
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) == full)
    #expect(try index.attachment(tenant: "acme", id: "att_2", now: t0) == bare)
    #expect(try index.attachment(tenant: "acme", id: "att_3", now: t0) == nil)
  }

  @Test(arguments: IndexFactory.all)
  func anotherTenantsIdLooksExactlyLikeAMissingOne(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1", tenant: "acme"))
    #expect(try index.attachment(tenant: "evil", id: "att_1", now: t0) == nil)
    #expect(try index.deleteAttachment(tenant: "evil", id: "att_1") == nil)
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) != nil)
    #expect(try index.deleteAttachment(tenant: "acme", id: "att_1")?.id == "att_1")
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) == nil)
    #expect(try index.deleteAttachment(tenant: "acme", id: "att_1") == nil)
  }

  @Test(arguments: IndexFactory.all)
  func duplicateIdIsAConflict(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1"))
    let error = #expect(throws: StorageError.self) { try index.insert(record("att_1", tenant: "other")) }
    #expect(error?.code == .conflict)
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0) != nil)
  }

  @Test(arguments: IndexFactory.all)
  func expiredRecordIsInvisibleBeforeItIsSwept(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1", lifetime: 60))
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0.addingTimeInterval(59)) != nil)
    #expect(try index.attachment(tenant: "acme", id: "att_1", now: t0.addingTimeInterval(60)) == nil)
    #expect(try index.referenceCount(of: record("x").blob) == 1)
  }

  @Test(arguments: IndexFactory.all)
  func deleteExpiredRemovesOnlyExpiredRowsInBatches(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    for number in 0..<5 { try index.insert(record("att_old\(number)", lifetime: 10)) }
    try index.insert(record("att_new", lifetime: 1_000))
    let now = t0.addingTimeInterval(100)
    let first = try index.deleteExpired(now: now, limit: 3)
    let second = try index.deleteExpired(now: now, limit: 3)
    let third = try index.deleteExpired(now: now, limit: 3)
    #expect(first.count == 3)
    #expect(second.count == 2)
    #expect(third.isEmpty)
    #expect(Set((first + second).map(\.id)) == Set((0..<5).map { "att_old\($0)" }))
    #expect(try index.attachment(tenant: "acme", id: "att_new", now: now) != nil)
  }

  @Test(arguments: IndexFactory.all)
  func referenceCountFollowsRowsSharingABlob(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let shared = record("att_a").blob
    try index.insert(record("att_a", tenant: "acme"))
    try index.insert(record("att_b", tenant: "beta"))
    try index.insert(record("att_c", blobSeed: 2))
    #expect(try index.referenceCount(of: shared) == 2)
    _ = try index.deleteAttachment(tenant: "acme", id: "att_a")
    #expect(try index.referenceCount(of: shared) == 1)
    _ = try index.deleteAttachment(tenant: "beta", id: "att_b")
    #expect(try index.referenceCount(of: shared) == 0)
    #expect(try index.referenceCount(of: record("x", blobSeed: 2).blob) == 1)
  }

  @Test(arguments: IndexFactory.all)
  func statisticsCountRowsBytesAndDistinctBlobs(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    #expect(
      try index.statistics()
        == IndexStatistics(attachments: 0, attachmentBytes: 0, blobs: 0, blobBytes: 0, idempotencyKeys: 0))
    try index.insert(record("att_a", blobSeed: 1, bytes: 100))
    try index.insert(record("att_b", blobSeed: 1, bytes: 100))
    try index.insert(record("att_c", blobSeed: 2, bytes: 50))
    _ = try index.beginIdempotent(
      tenant: "acme", key: "k", fingerprint: "f", now: t0, lifetime: 60, lease: 60)
    #expect(
      try index.statistics()
        == IndexStatistics(attachments: 3, attachmentBytes: 250, blobs: 2, blobBytes: 150, idempotencyKeys: 1)
    )
  }

  @Test(arguments: IndexFactory.all)
  func retentionOverrideIsPerTenantAndClearable(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    #expect(try index.retention(tenant: "acme") == nil)
    try index.setRetention(3_600, tenant: "acme")
    try index.setRetention(90.5, tenant: "beta")
    #expect(try index.retention(tenant: "acme") == 3_600)
    #expect(try index.retention(tenant: "beta") == 90.5)
    try index.setRetention(7_200, tenant: "acme")
    #expect(try index.retention(tenant: "acme") == 7_200)
    try index.setRetention(nil, tenant: "acme")
    #expect(try index.retention(tenant: "acme") == nil)
    #expect(try index.retention(tenant: "beta") == 90.5)
  }

  @Test(arguments: IndexFactory.all)
  func idempotencyKeyMovesFromStartedToInProgressToCompleted(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    func begin(_ tenant: String = "acme", _ fingerprint: String = "fp1", at now: Date = t0) throws
      -> IdempotencyBegin
    {
      try index.beginIdempotent(
        tenant: tenant, key: "key-1", fingerprint: fingerprint, now: now, lifetime: 86_400, lease: 600)
    }
    #expect(try begin() == .started)
    #expect(try begin() == .inProgress)
    #expect(try begin("acme", "fp2") == .mismatch)
    // Keys are per tenant.
    #expect(try begin("beta") == .started)
    let response = StoredResponse(
      status: 201, headers: ["Location": "/v1/attachments/att_1", "Content-Type": "application/json"],
      body: Array(#"{"id":"att_1"}"#.utf8))
    try index.completeIdempotent(tenant: "acme", key: "key-1", response: response)
    #expect(try begin() == .completed(response))
    #expect(try begin(at: t0.addingTimeInterval(86_399)) == .completed(response))
    #expect(try begin("acme", "fp2") == .mismatch)
    // After its lifetime the key is free again.
    #expect(try begin("acme", "fp2", at: t0.addingTimeInterval(86_400)) == .started)
  }

  @Test(arguments: IndexFactory.all)
  func abandonedKeyCanStartAgainButACompletedOneCannotBeAbandoned(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let begin = {
      try index.beginIdempotent(tenant: "acme", key: "k", fingerprint: "f", now: t0, lifetime: 60, lease: 60)
    }
    #expect(try begin() == .started)
    try index.abandonIdempotent(tenant: "acme", key: "k")
    #expect(try begin() == .started)
    let response = StoredResponse(status: 201, body: [])
    try index.completeIdempotent(tenant: "acme", key: "k", response: response)
    try index.abandonIdempotent(tenant: "acme", key: "k")
    #expect(try begin() == .completed(response))
    let error = #expect(throws: StorageError.self) {
      try index.completeIdempotent(tenant: "acme", key: "unclaimed", response: response)
    }
    #expect(error?.code == .notFound)
  }

  @Test(arguments: IndexFactory.all)
  func runningClaimHoldsItsKeyForItsLeaseOnly(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    func begin(_ fingerprint: String, at seconds: TimeInterval) throws -> IdempotencyBegin {
      try index.beginIdempotent(
        tenant: "acme", key: "k", fingerprint: fingerprint, now: t0.addingTimeInterval(seconds),
        lifetime: 3_600,
        lease: 60)
    }
    #expect(try begin("f", at: 0) == .started)
    #expect(try begin("f", at: 59) == .inProgress)
    #expect(try begin("g", at: 59) == .mismatch)
    // The lease passed without an answer: the claim counts as abandoned, whatever its fingerprint.
    #expect(try begin("g", at: 60) == .started)
    #expect(try begin("g", at: 61) == .inProgress)
    let response = StoredResponse(status: 201, body: [7])
    try index.completeIdempotent(tenant: "acme", key: "k", response: response)
    // An answer is kept for the key's lifetime, long after the lease.
    #expect(try begin("g", at: 3_659) == .completed(response))
    #expect(try begin("g", at: 3_660) == .started)
  }

  @Test(arguments: IndexFactory.all)
  func purgeDropsKeysCreatedBeforeTheCutoff(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let response = StoredResponse(status: 200, body: [1, 2, 3])
    func begin(_ key: String, at seconds: TimeInterval) throws -> IdempotencyBegin {
      try index.beginIdempotent(
        tenant: "acme", key: key, fingerprint: "f", now: t0.addingTimeInterval(seconds), lifetime: 600,
        lease: 60)
    }
    _ = try begin("running", at: 0)
    _ = try begin("done", at: 0)
    try index.completeIdempotent(tenant: "acme", key: "done", response: response)
    _ = try begin("later", at: 500)
    #expect(try index.purgeIdempotent(createdBefore: t0.addingTimeInterval(100)) == 2)
    #expect(try index.statistics().idempotencyKeys == 1)
    #expect(try begin("done", at: 501) == .started)
    #expect(try begin("later", at: 501) == .inProgress)
  }

  @Test(arguments: IndexFactory.all)
  func concurrentBeginsWithOneKeyStartExactlyOnce(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let outcomes = Failures()
    onThreads(16) { _ in
      do {
        let result = try index.beginIdempotent(
          tenant: "acme", key: "same", fingerprint: "f", now: t0, lifetime: 60, lease: 60)
        outcomes.add("\(result)")
      } catch {
        outcomes.add("error \(error)")
      }
    }
    #expect(outcomes.all.filter { $0 == "started" }.count == 1)
    #expect(outcomes.all.filter { $0 == "inProgress" }.count == 15)
  }

  @Test(arguments: IndexFactory.all)
  func concurrentInsertsAndReadsAllSucceed(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let failures = Failures()
    onThreads(16) { worker in
      do {
        for number in 0..<20 {
          let id = "att_\(worker)_\(number)"
          try index.insert(record(id, tenant: "t\(worker)", blobSeed: UInt64(number)))
          if try index.attachment(tenant: "t\(worker)", id: id, now: t0)?.id != id {
            failures.add("lost \(id)")
          }
        }
      } catch {
        failures.add("worker \(worker): \(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    #expect(try index.statistics().attachments == 320)
  }

  @Test(arguments: IndexFactory.all)
  func valuesThatLookLikeSQLAreStoredAsGiven(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let tenant = "o'brien\"; DROP TABLE attachments; --"
    let odd = record(
      "att_'1", tenant: tenant,
      source: SourceInfo(
        format: "heic", width: 1, height: 2, bytes: 3, orientationSource: "exif'",
        colourProfile: "Ünïcødé P3 ✓ \\x00"))
    try index.insert(odd)
    #expect(try index.attachment(tenant: tenant, id: "att_'1", now: t0) == odd)
    #expect(try index.tenant(ofAttachment: "att_'1", now: t0) == tenant)
    #expect(try index.attachment(tenant: "o'brien", id: "att_'1", now: t0) == nil)
    let response = StoredResponse(
      status: 201, headers: ["Location": "/v1/attachments/att_'1"], body: [0, 39, 92, 0xFF, 0])
    _ = try index.beginIdempotent(
      tenant: tenant, key: "k'", fingerprint: "f'", now: t0, lifetime: 60, lease: 60)
    try index.completeIdempotent(tenant: tenant, key: "k'", response: response)
    #expect(
      try index.beginIdempotent(
        tenant: tenant, key: "k'", fingerprint: "f'", now: t0, lifetime: 60, lease: 60)
        == .completed(response))
    try index.setRetention(12.25, tenant: tenant)
    #expect(try index.retention(tenant: tenant) == 12.25)
    #expect(try index.statistics().attachments == 1)
  }

  @Test(arguments: IndexFactory.all)
  func freshIndexIsWritable(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.checkWritable(now: t0)
    try index.checkWritable(now: t0.addingTimeInterval(1))
  }

  // MARK: - Owners and usage counters

  @Test(arguments: IndexFactory.all)
  func theOwnerOfARecordReadsBackAndDeletesWithIt(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let owned = record("att_u", owner: "user-7 ✓")
    try index.insert(owned)
    try index.insert(record("att_k"))
    #expect(try index.attachment(tenant: "acme", id: "att_u", now: t0)?.owner == "user-7 ✓")
    #expect(try index.attachment(tenant: "acme", id: "att_u", now: t0) == owned)
    #expect(try index.attachment(tenant: "acme", id: "att_k", now: t0)?.owner == nil)
    #expect(try index.deleteAttachment(tenant: "acme", id: "att_u")?.owner == "user-7 ✓")
    #expect(try index.deleteExpired(now: t0.addingTimeInterval(86_400), limit: 10).map(\.owner) == [nil])
  }

  @Test(arguments: IndexFactory.all)
  func aUsageCounterAddsWithinItsLimitsAndRefusesPastThemWithoutAdding(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let key = UsageKey(tenant: "acme", name: "jti:abc")
    let limits = UsageLimits(maxFiles: 3, maxBytes: 1_000)
    let expiry = t0.addingTimeInterval(600)
    func reserve(_ files: Int, _ bytes: Int, _ limits: UsageLimits = limits) throws -> UsageReservation {
      try index.reserveUsage(
        key, adding: UsageAmount(files: files, bytes: bytes), limits: limits, expiresAt: expiry, now: t0)
    }
    #expect(try index.usage(key, now: t0) == nil)
    #expect(try reserve(1, 400) == .reserved(UsageAmount(files: 1, bytes: 400)))
    #expect(try reserve(1, 601) == .bytesExceeded(UsageAmount(files: 1, bytes: 400)))
    #expect(try reserve(2, 600) == .reserved(UsageAmount(files: 3, bytes: 1_000)))
    #expect(try reserve(1, 0) == .filesExceeded(UsageAmount(files: 3, bytes: 1_000)))
    // Files are judged first when both would pass.
    #expect(try reserve(1, 1) == .filesExceeded(UsageAmount(files: 3, bytes: 1_000)))
    #expect(try index.usage(key, now: t0) == UsageAmount(files: 3, bytes: 1_000))
    // Counters are per tenant and name; no limits means no refusal.
    let other = UsageKey(tenant: "beta", name: "jti:abc")
    #expect(
      try index.reserveUsage(
        other, adding: UsageAmount(files: 50, bytes: 1 << 40), limits: UsageLimits(), expiresAt: expiry,
        now: t0)
        == .reserved(UsageAmount(files: 50, bytes: 1 << 40)))
    #expect(try index.usage(key, now: t0) == UsageAmount(files: 3, bytes: 1_000))
  }

  @Test(arguments: IndexFactory.all)
  func releasedUsageComesBackButNeverBelowZero(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let key = UsageKey(tenant: "acme", name: "day:20270115:u1")
    let limits = UsageLimits(maxFiles: 2)
    let expiry = t0.addingTimeInterval(600)
    _ = try index.reserveUsage(
      key, adding: UsageAmount(files: 2, bytes: 10), limits: limits, expiresAt: expiry, now: t0)
    try index.releaseUsage(key, amount: UsageAmount(files: 1, bytes: 4))
    #expect(try index.usage(key, now: t0) == UsageAmount(files: 1, bytes: 6))
    try index.releaseUsage(key, amount: UsageAmount(files: 5, bytes: 50))
    #expect(try index.usage(key, now: t0) == .zero)
    try index.releaseUsage(UsageKey(tenant: "acme", name: "missing"), amount: UsageAmount(files: 1, bytes: 1))
    #expect(try index.usage(UsageKey(tenant: "acme", name: "missing"), now: t0) == nil)
  }

  @Test(arguments: IndexFactory.all)
  func anExpiredCounterStartsAfreshAndIsPurged(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let key = UsageKey(tenant: "acme", name: "jti:old")
    let limits = UsageLimits(maxFiles: 1)
    let one = UsageAmount(files: 1, bytes: 5)
    #expect(
      try index.reserveUsage(key, adding: one, limits: limits, expiresAt: t0.addingTimeInterval(60), now: t0)
        == .reserved(one))
    // A live counter keeps its expiry: a later, longer one does not extend it.
    let later = t0.addingTimeInterval(30)
    #expect(
      try index.reserveUsage(
        key, adding: one, limits: limits, expiresAt: t0.addingTimeInterval(999), now: later)
        == .filesExceeded(one))
    let expired = t0.addingTimeInterval(60)
    #expect(try index.usage(key, now: expired) == nil)
    #expect(
      try index.reserveUsage(
        key, adding: one, limits: limits, expiresAt: t0.addingTimeInterval(120), now: expired)
        == .reserved(one))
    _ = try index.reserveUsage(
      UsageKey(tenant: "acme", name: "jti:long"), adding: one, limits: limits,
      expiresAt: t0.addingTimeInterval(900), now: t0)
    #expect(try index.purgeUsage(expiredBefore: t0.addingTimeInterval(120)) == 1)
    #expect(try index.usage(key, now: expired) == nil)
    #expect(try index.usage(UsageKey(tenant: "acme", name: "jti:long"), now: expired) == one)
  }

  @Test(arguments: IndexFactory.all)
  func concurrentReservationsNeverPassALimit(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let key = UsageKey(tenant: "acme", name: "jti:race")
    let outcomes = Failures()
    onThreads(16) { _ in
      do {
        let result = try index.reserveUsage(
          key, adding: UsageAmount(files: 1, bytes: 100), limits: UsageLimits(maxFiles: 5),
          expiresAt: t0.addingTimeInterval(600), now: t0)
        if case .reserved = result { outcomes.add("reserved") } else { outcomes.add("refused") }
      } catch {
        outcomes.add("error \(error)")
      }
    }
    #expect(outcomes.all.filter { $0 == "reserved" }.count == 5)
    #expect(outcomes.all.filter { $0 == "refused" }.count == 11)
    #expect(try index.usage(key, now: t0) == UsageAmount(files: 5, bytes: 500))
  }
}
