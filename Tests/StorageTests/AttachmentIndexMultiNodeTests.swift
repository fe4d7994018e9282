import Foundation
import Storage
import Synchronization
import Testing

/// Two index instances over the same data, acting as two attachd nodes: what one node holds
/// (a claim, a pin, a row it is deleting) the other respects, and work split between sweeping
/// nodes is done exactly once.
@Suite struct AttachmentIndexMultiNodeTests {
  @Test(arguments: IndexFactory.all)
  func nodesSeeEachOthersRowsAndReferences(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    try a.insert(record("att_1"))
    #expect(try b.attachment(tenant: "acme", id: "att_1", now: t0) == record("att_1"))
    #expect(try b.referenceCount(of: record("att_1").blob) == 1)
    #expect(try b.deleteAttachment(tenant: "acme", id: "att_1") != nil)
    #expect(try a.attachment(tenant: "acme", id: "att_1", now: t0) == nil)
    #expect(try a.referenceCount(of: record("att_1").blob) == 0)
  }

  @Test(arguments: IndexFactory.all)
  func claimOnOneNodeHoldsTheKeyOnTheOtherUntilItsLeasePasses(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    func begin(_ index: any AttachmentIndex, at seconds: TimeInterval) throws -> IdempotencyBegin {
      try index.beginIdempotent(
        tenant: "acme", key: "k", fingerprint: "f", now: t0.addingTimeInterval(seconds), lifetime: 86_400,
        lease: 300)
    }
    #expect(try begin(a, at: 0) == .started)
    #expect(try begin(b, at: 299) == .inProgress)
    // Node A died with the request: after the lease, node B runs the retry.
    #expect(try begin(b, at: 300) == .started)
    #expect(try begin(a, at: 301) == .inProgress)
    // If A was only slow, the first answer stored wins and the other completion is refused.
    let first = StoredResponse(status: 201, body: Array("from a".utf8))
    try a.completeIdempotent(tenant: "acme", key: "k", response: first)
    let error = #expect(throws: StorageError.self) {
      try b.completeIdempotent(tenant: "acme", key: "k", response: StoredResponse(status: 201, body: []))
    }
    #expect(error?.code == .notFound)
    #expect(try begin(b, at: 302) == .completed(first))
  }

  @Test(arguments: IndexFactory.all)
  func pinOnOneNodeStopsTheOthersCollectionUntilReleased(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    let blob = BlobHash.of(sampleBytes(8, seed: 5))
    let pin = try a.pinBlob(blob, now: t0, lease: 600)
    var removals = 0
    #expect(
      try !b.collectBlob(blob, now: t0, unknown: false) { _ in
        removals += 1
        return true
      })
    #expect(try b.unreferencedBlobs(now: t0, limit: 10).isEmpty)
    #expect(removals == 0)
    try a.unpinBlob(pin)
    #expect(
      try b.collectBlob(blob, now: t0, unknown: false) { _ in
        removals += 1
        return true
      })
    #expect(removals == 1)
  }

  @Test(.timeLimit(.minutes(1)), arguments: IndexFactory.all)
  func pinWaitsForACollectionInProgressOnTheOtherNode(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    let blob = BlobHash.of(sampleBytes(8, seed: 6))
    let removing = DispatchSemaphore(value: 0)
    let removalFinished = Mutex<Date?>(nil)
    let pinned = Mutex<Date?>(nil)
    let failures = Failures()
    let collector = Thread {
      do {
        _ = try b.collectBlob(blob, now: t0, unknown: true) { _ in
          removing.signal()
          usleep(300_000)  // a slow delete of the bytes
          removalFinished.withLock { $0 = Date() }
          return true
        }
      } catch {
        failures.add("collect: \(error)")
      }
    }
    collector.start()
    removing.wait()
    do {
      _ = try a.pinBlob(blob, now: t0, lease: 600)
      pinned.withLock { $0 = Date() }
    } catch {
      failures.add("pin: \(error)")
    }
    while removalFinished.withLock({ $0 }) == nil { usleep(1_000) }
    #expect(failures.all.isEmpty, "\(failures.all)")
    // The pin returned only after the bytes were gone, so its upload writes them again.
    let removedAt = try #require(removalFinished.withLock { $0 })
    let pinnedAt = try #require(pinned.withLock { $0 })
    #expect(pinnedAt >= removedAt)
    #expect(try !b.collectBlob(blob, now: t0, unknown: true) { _ in true })
  }

  @Test(.timeLimit(.minutes(2)), arguments: IndexFactory.all)
  func concurrentSweepsOnTwoNodesDeleteEachExpiredRowAndBlobExactlyOnce(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    // 120 expired rows over 12 blobs (two tenants share each), plus live rows on 3 of those blobs.
    for number in 0..<120 {
      try a.insert(
        record(
          "att_old\(number)", tenant: number % 2 == 0 ? "acme" : "beta", blobSeed: UInt64(number % 12),
          lifetime: 10))
    }
    for number in 0..<3 {
      try b.insert(record("att_live\(number)", blobSeed: UInt64(number), lifetime: 10_000))
    }
    let now = t0.addingTimeInterval(100)
    let deleted = Mutex<[String]>([])
    let removed = Mutex<[BlobHash]>([])
    let failures = Failures()
    // Four sweepers, two per node, each deleting in small batches, then collecting what it freed.
    onThreads(4) { worker in
      let index = worker % 2 == 0 ? a : b
      do {
        while true {
          let batch = try index.deleteExpired(now: now, limit: 7)
          deleted.withLock { $0 += batch.map(\.id) }
          for blob in Set(batch.map(\.blob)) {
            _ = try index.collectBlob(blob, now: now, unknown: false) { hash in
              removed.withLock { $0.append(hash) }
              return true
            }
          }
          if batch.isEmpty { break }
        }
        for blob in try index.unreferencedBlobs(now: now, limit: 100) {
          _ = try index.collectBlob(blob, now: now, unknown: false) { hash in
            removed.withLock { $0.append(hash) }
            return true
          }
        }
      } catch {
        failures.add("sweeper \(worker): \(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    let ids = deleted.withLock { $0 }
    #expect(ids.count == 120)
    #expect(Set(ids) == Set((0..<120).map { "att_old\($0)" }))
    let blobs = removed.withLock { $0 }
    let expected = Set((3..<12).map { BlobHash.of(sampleBytes(8, seed: UInt64($0))) })
    #expect(blobs.count == 9, "each freed blob removed once, live ones never")
    #expect(Set(blobs) == expected)
    for number in 0..<3 {
      #expect(try a.attachment(tenant: "acme", id: "att_live\(number)", now: now) != nil)
      #expect(try b.referenceCount(of: BlobHash.of(sampleBytes(8, seed: UInt64(number)))) == 1)
    }
    #expect(try a.statistics().attachments == 3)
  }

  @Test(.timeLimit(.minutes(1)), arguments: IndexFactory.all)
  func concurrentPurgesOnTwoNodesCountEachKeyOnce(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (a, b) = try factory.makeNodes(directory.path)
    for number in 0..<300 {
      _ = try a.beginIdempotent(
        tenant: "acme", key: "k\(number)", fingerprint: "f", now: t0, lifetime: 60, lease: 60)
    }
    let purged = Mutex(0)
    let failures = Failures()
    onThreads(4) { worker in
      do {
        let count = try (worker % 2 == 0 ? a : b).purgeIdempotent(createdBefore: t0)
        purged.withLock { $0 += count }
      } catch {
        failures.add("\(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    #expect(purged.withLock { $0 } == 300)
    #expect(try b.statistics().idempotencyKeys == 0)
  }
}
