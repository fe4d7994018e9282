import Foundation
import Storage
import Synchronization
import Testing

/// Blob pins and collection, one index: the part of the conformance suite that keeps a blob
/// alive while an upload refers to it or is about to.
@Suite struct AttachmentIndexBlobTests {
  private let blob = BlobHash.of(sampleBytes(8, seed: 1))

  @Test(arguments: IndexFactory.all)
  func unreferencedUnpinnedBlobIsCollectedOnceAndForgotten(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1"))
    var removals = 0
    #expect(
      try !index.collectBlob(blob, now: t0, unknown: false) { _ in
        removals += 1
        return true
      })
    #expect(removals == 0)
    _ = try index.deleteAttachment(tenant: "acme", id: "att_1")
    #expect(try index.unreferencedBlobs(now: t0, limit: 10) == [blob])
    #expect(
      try index.collectBlob(blob, now: t0, unknown: false) { _ in
        removals += 1
        return true
      })
    #expect(removals == 1)
    #expect(try index.unreferencedBlobs(now: t0, limit: 10).isEmpty)
    // A blob the index never heard of (bytes left by a crash) is collected too.
    let stray = BlobHash.of(sampleBytes(8, seed: 99))
    #expect(
      try !index.collectBlob(stray, now: t0, unknown: false) { _ in
        removals += 1
        return true
      })
    #expect(
      try index.collectBlob(stray, now: t0, unknown: true) { _ in
        removals += 1
        return true
      })
    #expect(removals == 2)
    // Once collected, a blob is unknown again: a second sweeper's late call removes nothing.
    #expect(
      try !index.collectBlob(blob, now: t0, unknown: false) { _ in
        removals += 1
        return true
      })
    #expect(removals == 2)
  }

  @Test(arguments: IndexFactory.all)
  func pinKeepsABlobUntilUnpinnedOrItsLeasePasses(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let first = try index.pinBlob(blob, now: t0, lease: 60)
    let second = try index.pinBlob(blob, now: t0, lease: 120)
    #expect(first.id != second.id)
    #expect(first.expiresAt == t0.addingTimeInterval(60))
    let remove: (BlobHash) throws -> Bool = { _ in true }
    #expect(try !index.collectBlob(blob, now: t0, unknown: false, remove: remove))
    #expect(try index.unreferencedBlobs(now: t0, limit: 10).isEmpty)
    try index.unpinBlob(first)
    #expect(try !index.collectBlob(blob, now: t0, unknown: false, remove: remove))
    // The second pin's lease has passed: it protects nothing any more.
    #expect(try index.unreferencedBlobs(now: t0.addingTimeInterval(120), limit: 10) == [blob])
    #expect(try index.collectBlob(blob, now: t0.addingTimeInterval(120), unknown: false, remove: remove))
    try index.unpinBlob(second)  // already gone with the blob: harmless
  }

  @Test(arguments: IndexFactory.all)
  func pinnedUploadThatNeverInsertsLeavesItsBlobForTheSweep(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    let pin = try index.pinBlob(blob, now: t0, lease: 600)
    #expect(try index.referenceCount(of: blob) == 0)
    try index.unpinBlob(pin)
    #expect(try index.unreferencedBlobs(now: t0, limit: 10) == [blob])
    // Rows referring to the blob keep it whether pinned or not; the statistics count it once.
    try index.insert(record("att_1", bytes: 500))
    #expect(try index.unreferencedBlobs(now: t0, limit: 10).isEmpty)
    #expect(try index.statistics().blobs == 1)
    #expect(try index.statistics().blobBytes == 500)
  }

  @Test(arguments: IndexFactory.all)
  func expiredPinsArePurgedAndLivePinsKept(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    _ = try index.pinBlob(blob, now: t0, lease: 10)
    _ = try index.pinBlob(blob, now: t0, lease: 20)
    _ = try index.pinBlob(BlobHash.of(sampleBytes(8, seed: 2)), now: t0, lease: 30)
    #expect(try index.purgeBlobPins(expiredBy: t0.addingTimeInterval(20)) == 2)
    #expect(try index.purgeBlobPins(expiredBy: t0.addingTimeInterval(20)) == 0)
    #expect(
      try !index.collectBlob(
        BlobHash.of(sampleBytes(8, seed: 2)), now: t0.addingTimeInterval(20), unknown: true
      ) {
        _ in true
      })
  }

  @Test(arguments: IndexFactory.all)
  func failedRemovalKeepsTheBlobKnown(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.unpinBlob(try index.pinBlob(blob, now: t0, lease: 60))
    #expect(throws: StorageError.self) {
      try index.collectBlob(blob, now: t0, unknown: false) { _ in throw StorageError(.io, "disk said no") }
    }
    #expect(try index.unreferencedBlobs(now: t0, limit: 10) == [blob])
    // Bytes already gone: reported as not removed, and the blob is forgotten all the same.
    #expect(try !index.collectBlob(blob, now: t0, unknown: false) { _ in false })
    #expect(try index.unreferencedBlobs(now: t0, limit: 10).isEmpty)
  }
}
