import Crypto
import Foundation
import Storage
import Testing

/// The behaviour every upload store must show: creation, offsets, lengths, completion, results,
/// tenancy and expiry. Writers, takeovers, peers and restarts are in `+Writers`.
@Suite(.timeLimit(.minutes(1))) struct UploadStoreConformanceTests {
  @Test(arguments: UploadStoreFactory.all)
  func createdUploadReadsBackAtOffsetZeroWithEveryField(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let store = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    let metadata = Array("filename aW1nLmhlaWM=,type aW1hZ2UvaGVpYw==".utf8)
    let created = try store.create(
      newUpload(owner: "user-7", length: 5_000, maxLength: 10_000, metadata: metadata, lifetime: 3_600))
    #expect(created.id.hasPrefix("upl_") && created.id.utf8.count == 30)
    #expect(SecureRandom.isIdentifier(created.id, prefix: "upl_"))
    #expect(created.tenant == "acme" && created.owner == "user-7" && created.protocolName == "test")
    #expect(created.metadata == metadata)
    #expect(created.length == 5_000 && created.maxLength == 10_000 && created.limit == 5_000)
    #expect(
      created.offset == 0 && created.status == .receiving && created.result == nil && !created.isComplete)
    #expect(created.createdAt == clock.now && created.expiresAt == clock.now.addingTimeInterval(3_600))
    #expect(try store.state(tenant: "acme", id: created.id) == created)
    // The description is for logs: no metadata, no owner.
    for text in [created.description, String(reflecting: created), "\(created)"] {
      #expect(!text.contains("aW1n") && !text.contains("user-7") && text.contains(created.id))
    }
    let other = try store.create(newUpload(length: nil))
    #expect(other.id != created.id && other.length == nil && other.limit == 1 << 20)
  }

  @Test(arguments: UploadStoreFactory.all)
  func anotherTenantsUploadLooksExactlyLikeAMissingOne(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let upload = try store.create(newUpload(length: 10))
    let missing = SecureRandom.identifier(prefix: "upl_")
    for id in [upload.id, missing, "upl_../../index.sqlite", "att_" + upload.id.dropFirst(4), ""] {
      #expect(try store.state(tenant: "evil", id: id) == nil)
      #expect(try !store.cancel(tenant: "evil", id: id))
      for error in [
        #expect(throws: StorageError.self) { try store.writer(tenant: "evil", id, offset: 0) },
        #expect(throws: StorageError.self) { try store.setLength(tenant: "evil", id: id, length: 10) },
        #expect(throws: StorageError.self) { try store.complete(tenant: "evil", id: id) },
        #expect(throws: StorageError.self) { try store.abandonProcessing(tenant: "evil", id: id) },
        #expect(throws: StorageError.self) {
          try store.recordResult(
            tenant: "evil", id: id,
            result: UploadResult(attachmentID: nil, response: StoredResponse(status: 201, body: [])))
        },
      ] {
        #expect(error?.code == .notFound)
      }
    }
    // The owner's upload is untouched by all of that.
    #expect(try store.state(tenant: "acme", id: upload.id) == upload)
  }

  @Test(arguments: UploadStoreFactory.all)
  func bytesAreAcknowledgedByCommitAndReadBackWholeOnCompletion(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(10_000, seed: 1)
    let upload = try store.create(newUpload(length: bytes.count))
    let writer = try store.writer(upload.id, offset: 0)
    #expect(writer.upload.offset == 0 && writer.committedOffset == 0)
    _ = try bytes[0..<1_000].withUnsafeBytes { try writer.append($0) }
    // Buffered is not acknowledged.
    #expect(writer.receivedOffset == 1_000 && writer.committedOffset == 0)
    #expect(try store.state(tenant: "acme", id: upload.id)?.offset == 0)
    // Written out is not acknowledged either, until a commit (or enough bytes for one).
    #expect(try writer.flush().offset == 0 && writer.receivedOffset == 1_000)
    #expect(try writer.commit().offset == 1_000)
    #expect(try store.state(tenant: "acme", id: upload.id)?.offset == 1_000)
    #expect(try writer.commit().offset == 1_000)  // nothing new: nothing changes
    try writer.write(bytes[1_000...], slice: 777)
    #expect(try writer.close().offset == bytes.count)
    #expect(try writer.close().offset == bytes.count)  // closing again changes nothing
    #expect(try store.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func flushesFreeTheBufferAndCommitEveryCommitBytes(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(9_000, seed: 20)
    let upload = try store.create(newUpload(length: bytes.count))
    let writer = try store.writer(upload.id, offset: 0)
    var outcomes: [AppendOutcome] = []
    for start in stride(from: 0, to: 8_192, by: 1_024) {
      outcomes.append(try bytes[start..<(start + 1_024)].withUnsafeBytes { try writer.append($0) })
      guard outcomes.last == .flushNeeded else { continue }
      let committed = try writer.flush().offset
      // 4 KiB buffers, 8 KiB commits: the first flush only writes out, the second commits both.
      #expect(committed == (start + 1_024 < 8_192 ? 0 : 8_192))
      #expect(try store.state(tenant: "acme", id: upload.id)?.offset == committed)
    }
    #expect(outcomes.filter { $0 == .flushNeeded }.count == 2)
    try writer.write(bytes[8_192...])
    #expect(try writer.close().offset == bytes.count)
    #expect(try store.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func appendAtAnotherOffsetIsAMismatchCarryingTheCurrentOffset(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(3_000, seed: 2)
    let upload = try store.create(newUpload(length: bytes.count))
    // A writer dropped without close: its buffered bytes were never acknowledged, its lease is dead.
    try store.writer(upload.id, offset: 0).write(bytes[0..<1_200])
    #expect(try store.put(upload.id, bytes[0..<1_200], at: 0).offset == 1_200)
    for offset in [0, 1_199, 1_201, 3_000, 99_999] {
      let error = #expect(throws: StorageError.self) { try store.writer(upload.id, offset: offset) }
      #expect(error?.code == .offsetMismatch && error?.offset == 1_200)
    }
    try store.put(upload.id, bytes[1_200...], at: 1_200)
    #expect(try store.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func bytesPastTheDeclaredLengthOrTheMaximumAreRefusedWhole(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let declared = try store.create(newUpload(length: 100))
    let writer = try store.writer(declared.id, offset: 0)
    _ = try sampleBytes(60, seed: 3).withUnsafeBytes { try writer.append($0) }
    let past = #expect(throws: StorageError.self) {
      try sampleBytes(41, seed: 4).withUnsafeBytes { try writer.append($0) }
    }
    #expect(past?.code == .lengthExceeded && past?.offset == 0)
    _ = try sampleBytes(40, seed: 4).withUnsafeBytes { try writer.append($0) }
    #expect(try writer.close().offset == 100)

    let deferred = try store.create(newUpload(length: nil, maxLength: 5_000))
    let open = try store.writer(deferred.id, offset: 0)
    try open.write(sampleBytes(5_000, seed: 5))
    let over = #expect(throws: StorageError.self) { try [UInt8(1)].withUnsafeBytes { try open.append($0) } }
    #expect(over?.code == .lengthExceeded)
    try open.close()
    let tooLong = #expect(throws: StorageError.self) {
      try store.create(newUpload(length: 5_001, maxLength: 5_000))
    }
    #expect(tooLong?.code == .lengthExceeded)
  }

  @Test(arguments: UploadStoreFactory.all)
  func deferredLengthIsDeclaredOnceAndCompletionWaitsForEveryByte(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(9_000, seed: 6)
    let upload = try store.create(newUpload(length: nil, maxLength: 10_000))
    try store.put(upload.id, bytes[0..<4_000], at: 0)
    for (length, code) in [(3_999, StorageError.Code.lengthMismatch), (10_001, .lengthExceeded)] {
      let error = #expect(throws: StorageError.self) {
        try store.setLength(tenant: "acme", id: upload.id, length: length)
      }
      #expect(error?.code == code)
    }
    #expect(try store.setLength(tenant: "acme", id: upload.id, length: 9_000).length == 9_000)
    // Declaring the same length again is a no-op.
    #expect(try store.setLength(tenant: "acme", id: upload.id, length: 9_000).length == 9_000)
    let changed = #expect(throws: StorageError.self) {
      try store.setLength(tenant: "acme", id: upload.id, length: 8_000)
    }
    #expect(changed?.code == .lengthMismatch)
    let early = #expect(throws: StorageError.self) { try store.complete(tenant: "acme", id: upload.id) }
    #expect(early?.code == .uploadIncomplete && early?.offset == 4_000)
    // The declared length now bounds appends.
    let writer = try store.writer(upload.id, offset: 4_000)
    #expect(writer.upload.limit == 9_000)
    try writer.write(bytes[4_000...])
    try writer.close()
    #expect(try store.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func deferredLengthBecomesTheOffsetWhenTheClientSaysItIsComplete(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(6_500, seed: 7)
    let upload = try store.create(newUpload(length: nil))
    try store.put(upload.id, bytes, at: 0)
    guard case .body(let body, let state) = try store.complete(tenant: "acme", id: upload.id) else {
      Issue.record("no body")
      return
    }
    #expect(state.length == 6_500 && state.offset == 6_500 && state.status == .completed)
    #expect(body.count == 6_500 && body.withUnsafeBytes { Array($0) } == bytes)
    // Opening a writer may declare the length too, atomically with taking the upload.
    let other = try store.create(newUpload(length: nil))
    let writer = try store.writer(other.id, offset: 0, length: 20)
    #expect(writer.upload.length == 20)
    let error = #expect(throws: StorageError.self) { try store.writer(other.id, offset: 0, length: 30) }
    #expect(error?.code == .lengthMismatch)
  }

  @Test(arguments: UploadStoreFactory.all)
  func emptyUploadCompletesToAnEmptyBody(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let upload = try store.create(newUpload(length: 0))
    #expect(try store.completedBytes(upload.id) == [])
  }

  @Test(arguments: UploadStoreFactory.all)
  func completedUploadIsProcessedOnceAndAnswersItsFirstResult(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(5_000, seed: 8)
    let upload = try store.create(newUpload(length: bytes.count))
    try store.put(upload.id, bytes, at: 0)
    #expect(try store.completedBytes(upload.id) == bytes)
    // The claim is held: a second request must not process it too.
    let busy = #expect(throws: StorageError.self) { try store.complete(tenant: "acme", id: upload.id) }
    #expect(busy?.code == .inProgress)
    for call in [
      { _ = try store.writer(upload.id, offset: 5_000) },
      { _ = try store.setLength(tenant: "acme", id: upload.id, length: 6_000) },
    ] {
      let error = #expect(throws: StorageError.self) { try call() }
      #expect(error?.code == .uploadCompleted)
    }
    // A processor that gives up without a result lets a retry process again.
    try store.abandonProcessing(tenant: "acme", id: upload.id)
    #expect(try store.completedBytes(upload.id) == bytes)
    let first = UploadResult(
      attachmentID: "att_1",
      response: StoredResponse(status: 201, headers: ["Location": "/v1/attachments/att_1"], body: [1]))
    let recorded = try store.recordResult(tenant: "acme", id: upload.id, result: first)
    #expect(recorded.status == .processed && recorded.result == first)
    let second = UploadResult(attachmentID: "att_2", response: StoredResponse(status: 201, body: [2]))
    #expect(try store.recordResult(tenant: "acme", id: upload.id, result: second).result == first)
    guard case .processed(let state) = try store.complete(tenant: "acme", id: upload.id) else {
      Issue.record("a processed upload must answer its result")
      return
    }
    #expect(state.result == first && state.isComplete)
    #expect(try store.state(tenant: "acme", id: upload.id)?.result == first)
    let receiving = try store.create(newUpload(length: 10))
    let early = #expect(throws: StorageError.self) {
      try store.recordResult(tenant: "acme", id: receiving.id, result: first)
    }
    #expect(early?.code == .uploadIncomplete)
  }

  @Test(arguments: UploadStoreFactory.all)
  func cancelRemovesTheUploadAndStopsItsWriter(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let upload = try store.create(newUpload(length: 10_000))
    let stopped = CallCounter()
    let writer = try store.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {
      stopped.increment()
    }
    try writer.write(sampleBytes(5_000, seed: 9))
    #expect(try store.cancel(tenant: "acme", id: upload.id))
    #expect(stopped.count == 1 && writer.isPreempted)
    #expect(try store.state(tenant: "acme", id: upload.id) == nil)
    let append = #expect(throws: StorageError.self) {
      try [UInt8(0)].withUnsafeBytes { try writer.append($0) }
    }
    #expect(append?.code == .preempted)
    #expect(throws: StorageError.self) { try writer.flush() }
    _ = try? writer.close()
    #expect(try !store.cancel(tenant: "acme", id: upload.id))
    let error = #expect(throws: StorageError.self) { try store.writer(upload.id, offset: nil) }
    #expect(error?.code == .notFound)
  }

  @Test(arguments: UploadStoreFactory.all)
  func expiredUploadsAreInvisibleAtOnceAndDeletedInBatches(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let store = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    var short: [String] = []
    for seed in 0..<7 {
      let upload = try store.create(newUpload(length: 2_000, lifetime: 60))
      try store.put(upload.id, sampleBytes(1_500, seed: UInt64(seed)), at: 0)
      short.append(upload.id)
    }
    let long = try store.create(newUpload(length: 2_000, lifetime: 3_600))
    try store.put(long.id, sampleBytes(1_500, seed: 99), at: 0)
    #expect(try store.deleteExpired(limit: 10) == [])
    clock.advance(by: 59)
    #expect(try store.state(tenant: "acme", id: short[0]) != nil)
    clock.advance(by: 1)
    for id in short {
      #expect(try store.state(tenant: "acme", id: id) == nil)
      let error = #expect(throws: StorageError.self) { try store.writer(id, offset: nil) }
      #expect(error?.code == .notFound)
    }
    let first = try store.deleteExpired(limit: 3)
    let second = try store.deleteExpired(limit: 3)
    #expect(first.count == 3 && second.count == 3)
    #expect(try store.deleteAllExpired(batch: 3) == 1)
    #expect(Set(first + second).isSubset(of: Set(short)))
    #expect(try store.deleteExpired(limit: 3) == [])
    #expect(try store.state(tenant: "acme", id: long.id)?.offset == 1_500)
    // A cancel of an expired (not yet deleted) upload reports it as already gone.
    let late = try store.create(newUpload(length: 10, lifetime: 1))
    clock.advance(by: 1)
    #expect(try !store.cancel(tenant: "acme", id: late.id))
  }

  @Test(arguments: UploadStoreFactory.all)
  func invalidCreationsAreRefused(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let big = [UInt8](repeating: 0x41, count: UploadStoreFactory.testConfiguration.maxMetadataBytes + 1)
    for upload in [
      newUpload(tenant: "", length: 1), newUpload(length: -1), newUpload(length: nil, maxLength: -1),
      newUpload(length: 1, lifetime: 0), newUpload(length: 1, metadata: big),
    ] {
      let error = #expect(throws: StorageError.self) { try store.create(upload) }
      #expect(error?.code == .invalidArgument)
    }
  }
}
