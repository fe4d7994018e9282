import Foundation
import Storage
import Testing

func rendition(
  of attachment: String, profile: String = "anthropic", blobSeed: UInt64 = 50, created: Date = t0
) -> Rendition {
  Rendition(
    attachment: attachment, profile: profile, blob: BlobHash.of(sampleBytes(8, seed: blobSeed)), width: 1238,
    height: 928, bytes: 400, createdAt: created)
}

/// Renditions, one index: stored once per profile, each a reference to its blob, gone with
/// their attachment.
@Suite struct AttachmentIndexRenditionTests {
  @Test(arguments: IndexFactory.all)
  func renditionReadsBackAndCountsAsAReferenceToItsBlob(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1"))
    let made = rendition(of: "att_1")
    #expect(try index.insertRendition(made, now: t0) == made)
    let openai = rendition(of: "att_1", profile: "openai", blobSeed: 51)
    #expect(try index.insertRendition(openai, now: t0) == openai)
    #expect(try index.renditions(ofAttachment: "att_1").sorted { $0.profile < $1.profile } == [made, openai])
    #expect(try index.renditions(ofAttachment: "att_2").isEmpty)
    #expect(try index.referenceCount(of: made.blob) == 1)
    #expect(try index.unreferencedBlobs(now: t0, limit: 10).isEmpty)
    #expect(try index.statistics().blobs == 3)
  }

  @Test(arguments: IndexFactory.all)
  func aSecondRenditionOfAProfileKeepsTheFirstAndAddsNoReference(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1"))
    let first = rendition(of: "att_1", blobSeed: 50)
    let second = rendition(of: "att_1", blobSeed: 60)
    #expect(try index.insertRendition(first, now: t0) == first)
    #expect(try index.insertRendition(second, now: t0) == first)
    #expect(try index.referenceCount(of: first.blob) == 1)
    #expect(try index.referenceCount(of: second.blob) == 0)
    #expect(try index.renditions(ofAttachment: "att_1") == [first])
  }

  @Test(arguments: IndexFactory.all)
  func aRenditionOfAMissingOrExpiredAttachmentIsNotStored(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1", lifetime: 60))
    #expect(try index.insertRendition(rendition(of: "att_none"), now: t0) == nil)
    #expect(try index.insertRendition(rendition(of: "att_1"), now: t0.addingTimeInterval(60)) == nil)
    #expect(try index.renditions(ofAttachment: "att_1").isEmpty)
    #expect(try index.renditions(ofAttachment: "att_none").isEmpty)
    #expect(try index.referenceCount(of: rendition(of: "att_1").blob) == 0)
  }

  @Test(arguments: IndexFactory.all)
  func deletingAnAttachmentDeletesItsRenditionsAndReleasesTheirBlobs(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_1", blobSeed: 1))
    try index.insert(record("att_2", blobSeed: 2))
    // Two attachments whose renditions share bytes: one blob, two references.
    let shared = rendition(of: "att_1", blobSeed: 70)
    _ = try index.insertRendition(shared, now: t0)
    _ = try index.insertRendition(rendition(of: "att_2", blobSeed: 70), now: t0)
    _ = try index.insertRendition(rendition(of: "att_1", profile: "gemini", blobSeed: 71), now: t0)
    #expect(try index.referenceCount(of: shared.blob) == 2)
    #expect(try index.deleteAttachment(tenant: "evil", id: "att_1") == nil)
    #expect(try index.renditions(ofAttachment: "att_1").count == 2)
    #expect(try index.deleteAttachment(tenant: "acme", id: "att_1")?.id == "att_1")
    #expect(try index.renditions(ofAttachment: "att_1").isEmpty)
    #expect(try index.referenceCount(of: shared.blob) == 1)
    let gemini = rendition(of: "att_1", profile: "gemini", blobSeed: 71).blob
    #expect(try index.referenceCount(of: gemini) == 0)
    #expect(Set(try index.unreferencedBlobs(now: t0, limit: 10)) == [record("x", blobSeed: 1).blob, gemini])
    // The id can never come back with the old renditions.
    #expect(try index.insertRendition(rendition(of: "att_1"), now: t0) == nil)
  }

  @Test(arguments: IndexFactory.all)
  func expiredAttachmentsTakeTheirRenditionsWithThem(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let index = try factory.make(directory.path)
    try index.insert(record("att_old", blobSeed: 1, lifetime: 10))
    try index.insert(record("att_new", blobSeed: 2, lifetime: 1_000))
    let old = rendition(of: "att_old", blobSeed: 80)
    let new = rendition(of: "att_new", blobSeed: 81)
    _ = try index.insertRendition(old, now: t0)
    _ = try index.insertRendition(new, now: t0)
    let swept = try index.deleteExpired(now: t0.addingTimeInterval(100), limit: 10)
    #expect(swept.map(\.id) == ["att_old"])
    #expect(try index.renditions(ofAttachment: "att_old").isEmpty)
    #expect(try index.renditions(ofAttachment: "att_new") == [new])
    #expect(try index.referenceCount(of: old.blob) == 0)
    #expect(try index.referenceCount(of: new.blob) == 1)
  }

  @Test(arguments: IndexFactory.all)
  func renditionInsertsRacingADeleteNeverOutliveTheAttachment(factory: IndexFactory) throws {
    let directory = try TemporaryDirectory()
    let (first, second) = try factory.makeNodes(directory.path)
    for round in 0..<20 {
      let id = "att_race\(round)"
      try first.insert(record(id, blobSeed: UInt64(round)))
      let made = rendition(of: id, blobSeed: 1_000 + UInt64(round))
      onThreads(2) { thread in
        if thread == 0 {
          _ = try? second.insertRendition(made, now: t0)
        } else {
          _ = try? first.deleteAttachment(tenant: "acme", id: id)
        }
      }
      #expect(try first.renditions(ofAttachment: id).isEmpty)
      #expect(try second.referenceCount(of: made.blob) == 0)
    }
  }
}

/// Renditions through `AttachmentStore`: bytes on disk, collected when their attachment goes.
@Suite struct AttachmentStoreRenditionTests {
  @Test(arguments: StoreBackend.all)
  func deletingAnAttachmentRemovesItsRenditionBytes(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let store = try backend.make(directory, clock, .init())
    let record = try store.store(
      tenant: "acme", bytes: sampleBytes(10_000, seed: 1), width: 2048, height: 1536, source: sampleSource)
    let bytes = sampleBytes(3_000, seed: 2)
    let stored = try #require(
      try store.storeRendition(of: record, profile: "anthropic", bytes: bytes, width: 1238, height: 928))
    #expect(try store.read(stored) == bytes)
    #expect(try store.renditions(of: record) == ["anthropic": stored])
    // Made again (two requests at once): the first row stays, the bytes are the same blob.
    #expect(
      try store.storeRendition(of: record, profile: "anthropic", bytes: bytes, width: 1238, height: 928)
        == stored)
    #expect(try store.delete(tenant: "acme", id: record.id))
    #expect(try !store.blobs.exists(stored.blob))
    #expect(try !store.blobs.exists(record.blob))
    #expect(
      try store.storeRendition(of: record, profile: "openai", bytes: bytes, width: 768, height: 576) == nil)
  }

  /// A record stored under an id its caller derived (a completed upload's file) is stored once:
  /// storing it again, on any backend, returns the first record and adds no row.
  @Test(arguments: StoreBackend.all)
  func aNamedRecordStoredAgainIsTheFirstOne(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let store = try backend.make(directory, TestClock(), .init())
    let id = "att_0123456789ABCDEFGHJKMNPQRS"
    let first = try store.store(
      tenant: "acme", bytes: sampleBytes(10_000, seed: 1), width: 2048, height: 1536, source: sampleSource,
      id: id)
    #expect(first.id == id)
    let again = try store.store(
      tenant: "acme", bytes: sampleBytes(10_000, seed: 1), width: 2048, height: 1536, source: sampleSource,
      id: id)
    #expect(again == first)
    #expect(try store.index.statistics().attachments == 1)
    // Another tenant cannot reach it by naming the same id.
    #expect(throws: StorageError.self) {
      try store.store(
        tenant: "beta", bytes: sampleBytes(10, seed: 2), width: 1, height: 1, source: sampleSource, id: id)
    }
  }

  /// A video's kept source is copied from its spool file by the kernel: a whole file as it is,
  /// a multipart part (a range) alone through a scratch file; either way the blob is those bytes.
  @Test(arguments: StoreBackend.all)
  func aRenditionCopiedFromAnOpenFileIsExactlyItsRange(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let store = try backend.make(directory, TestClock(), .init())
    let record = try store.store(
      tenant: "acme", bytes: sampleBytes(10_000, seed: 1), width: 2048, height: 1536, source: sampleSource)
    let whole = sampleBytes(300_000, seed: 3)
    let path = directory.path + "/spooled"
    try Data(whole).write(to: URL(fileURLWithPath: path))
    let descriptor = open(path, O_RDONLY)
    #expect(descriptor >= 0)
    defer { close(descriptor) }
    for (profile, range) in [("part", 1_000..<250_001), ("whole", 0..<whole.count)] {
      let stored = try #require(
        try store.storeRendition(
          of: record, profile: profile, file: descriptor, range: range, scratchDirectory: directory.path,
          width: 1, height: 1))
      #expect(stored.bytes == range.count)
      #expect(try store.read(stored) == Array(whole[range]), "\(profile)")
    }
    // A range past the file's end is an error, not a short blob.
    #expect(throws: StorageError.self) {
      try store.storeRendition(
        of: record, profile: "past", file: descriptor, range: 299_000..<301_000,
        scratchDirectory: directory.path,
        width: 1, height: 1)
    }
    #expect(try store.renditions(of: record)["past"] == nil)
  }

  @Test(arguments: StoreBackend.all)
  func theSweepCollectsTheRenditionsOfExpiredAttachments(backend: StoreBackend) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let store = try backend.make(directory, clock, .init(sweepGrace: 0))
    let record = try store.store(
      tenant: "acme", bytes: sampleBytes(10_000, seed: 3), width: 2048, height: 1536, source: sampleSource,
      retention: 60)
    let stored = try #require(
      try store.storeRendition(
        of: record, profile: "gemini", bytes: sampleBytes(2_000, seed: 4), width: 1536, height: 1152))
    clock.advance(by: 61)
    let report = try store.sweep()
    #expect(report.expiredAttachments == 1)
    #expect(report.deletedBlobs == 2)
    #expect(try !store.blobs.exists(stored.blob))
  }
}
