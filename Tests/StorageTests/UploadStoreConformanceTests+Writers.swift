import Foundation
import Storage
import Synchronization
import Testing

/// Conformance, continued: one writer per upload, takeovers (in one process and across
/// instances), restarts, and many threads at once.
@Suite(.timeLimit(.minutes(1))) struct UploadStoreWriterConformanceTests {
  @Test(arguments: UploadStoreFactory.all)
  func aNewWriterTakesOverAfterTheOldOneCommitsWhatItReceived(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(20_000, seed: 1)
    let upload = try store.create(newUpload(length: bytes.count))
    let stopped = CallCounter()
    let old = try store.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {
      stopped.increment()
    }
    try old.write(bytes[0..<5_000])
    try old.commit()
    _ = try bytes[5_000..<5_904].withUnsafeBytes { try old.append($0) }
    #expect(old.committedOffset == 5_000 && old.receivedOffset == 5_904)

    let new = try store.writer(upload.id, offset: 5_904)
    #expect(stopped.count == 1 && old.isPreempted)
    #expect(new.upload.offset == 5_904)
    let append = #expect(throws: StorageError.self) { try [UInt8(0)].withUnsafeBytes { try old.append($0) } }
    #expect(append?.code == .preempted && append?.offset == 5_904)
    let flush = #expect(throws: StorageError.self) { try old.flush() }
    #expect(flush?.code == .preempted)
    #expect(try old.close().offset == 5_904)
    try new.write(bytes[5_904...])
    try new.close()
    #expect(stopped.count == 1)
    #expect(try store.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func offsetRetrievalSettlesTheWriterInFlight(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let upload = try store.create(newUpload(length: 10_000))
    let stopped = CallCounter()
    let writer = try store.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {
      stopped.increment()
    }
    try writer.write(sampleBytes(1_000, seed: 2))
    #expect(try store.state(tenant: "acme", id: upload.id)?.offset == 0)  // a plain read disturbs nothing
    #expect(!writer.isPreempted)
    #expect(try store.settledState(tenant: "acme", id: upload.id)?.offset == 1_000)
    #expect(writer.isPreempted && stopped.count == 1)
    #expect(try store.settledState(tenant: "evil", id: upload.id) == nil)
  }

  @Test(arguments: UploadStoreFactory.all)
  func completingOrDeclaringTheLengthAlsoTakesOverTheWriterInFlight(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(3_000, seed: 3)
    let upload = try store.create(newUpload(length: nil))
    let first = try store.writer(upload.id, offset: 0)
    try first.write(bytes[0..<2_000])
    #expect(try store.setLength(tenant: "acme", id: upload.id, length: 3_000).offset == 2_000)
    #expect(first.isPreempted)
    let second = try store.writer(upload.id, offset: 2_000)
    try second.write(bytes[2_000...])
    #expect(try store.completedBytes(upload.id) == bytes)  // commits the 1,000 bytes still buffered
    #expect(second.isPreempted)
  }

  @Test(arguments: UploadStoreFactory.all)
  func restartKeepsEveryAcknowledgedByteAndNothingElse(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let bytes = sampleBytes(30_000, seed: 4)
    let id: String
    do {
      let store = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
      id = try store.create(newUpload(length: bytes.count, metadata: [1, 2, 3])).id
      let writer = try store.writer(id, offset: 0)
      try writer.write(bytes[0..<10_000])
      #expect(try writer.commit().offset == 10_000)
      // Written out but not committed: a crash loses these too (the client resends them).
      try writer.write(bytes[10_000..<10_500])
      #expect(try writer.flush().offset == 10_000)
      // Received but never flushed: the process "dies" with these in its buffer.
      _ = try bytes[10_500..<12_000].withUnsafeBytes { try writer.append($0) }
    }
    let store = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    let state = try #require(try store.state(tenant: "acme", id: id))
    #expect(state.offset == 10_000 && state.metadata == [1, 2, 3] && state.status == .receiving)
    try store.put(id, bytes[10_000...], at: 10_000)
    guard case .body(let body, _) = try store.complete(tenant: "acme", id: id) else {
      Issue.record("no body")
      return
    }
    #expect(body.withUnsafeBytes { Array($0) } == bytes)
    // A processing claim of a dead process does not block a retry after the restart.
    let again = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    #expect(try again.completedBytes(id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func anUploadStartedOnOneNodeResumesOnAnother(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let nodeA = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    let nodeB = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, true)
    let bytes = sampleBytes(12_000, seed: 5)
    let upload = try nodeA.create(newUpload(length: bytes.count))
    try nodeA.put(upload.id, bytes[0..<7_000], at: 0)
    #expect(try nodeB.state(tenant: "acme", id: upload.id)?.offset == 7_000)
    try nodeB.put(upload.id, bytes[7_000...], at: 7_000)
    #expect(try nodeA.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func aWriterOnAnotherNodeIsAskedToLetGoAtItsNextFlush(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let nodeA = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    let nodeB = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, true)
    let bytes = sampleBytes(400_000, seed: 6)
    let upload = try nodeA.create(newUpload(length: bytes.count))
    let stopped = CallCounter()
    let old = try nodeA.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {
      stopped.increment()
    }
    try old.write(bytes[0..<1_000])
    try old.commit()
    let taken = Mutex<(any UploadWriter)?>(nil)
    let failure = Mutex<(any Error)?>(nil)
    let thief = Thread {
      do {
        let writer = try nodeB.writer(upload.id, offset: nil)
        taken.withLock { $0 = writer }
      } catch {
        failure.withLock { $0 = error }
      }
    }
    thief.start()
    // The old node keeps receiving and committing until it learns (from the index) it must stop.
    var offset = 1_000
    while !old.isPreempted && offset < bytes.count && failure.withLock({ $0 == nil }) {
      try old.write(bytes[offset..<(offset + 1_000)])
      try old.commit()
      offset += 1_000
      usleep(5_000)
    }
    #expect(old.isPreempted && stopped.count == 1)
    let deadline = Date().addingTimeInterval(20)
    while taken.withLock({ $0 == nil }) && failure.withLock({ $0 == nil }) && Date() < deadline {
      usleep(5_000)
    }
    #expect(failure.withLock { $0 } == nil)
    let new = try #require(taken.withLock { $0 })
    #expect(new.upload.offset == offset && old.committedOffset == offset)
    try new.write(bytes[offset...])
    try new.close()
    #expect(try nodeB.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func aSilentWriterOnAnotherNodeLosesTheUploadWhenItsLeaseExpires(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    let nodeA = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    let nodeB = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, true)
    let bytes = sampleBytes(9_000, seed: 7)
    let upload = try nodeA.create(newUpload(length: bytes.count))
    let stopped = CallCounter()
    let old = try nodeA.openWriter(tenant: "acme", id: upload.id, offset: 0, length: nil) {
      stopped.increment()
    }
    try old.write(bytes[0..<2_000])
    try old.commit()
    clock.advance(by: UploadStoreFactory.testConfiguration.leaseDuration + 1)
    let new = try nodeB.writer(upload.id, offset: 2_000)
    // The old writer wakes up: its bytes must not land, and it must learn it lost the upload.
    let late = sampleBytes(1_000, seed: 99)
    _ = try late.withUnsafeBytes { try old.append($0) }
    let error = #expect(throws: StorageError.self) { try old.flush() }
    #expect(error?.code == .preempted && old.isPreempted && stopped.count == 1)
    #expect(try old.close().offset == 2_000 && stopped.count == 1)
    try new.write(bytes[2_000...])
    try new.close()
    #expect(try nodeA.completedBytes(upload.id) == bytes)
  }

  @Test(arguments: UploadStoreFactory.all)
  func aHolderOnAnotherNodeThatDoesNotLetGoInTimeIsReportedNotWaitedFor(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let clock = TestClock()
    var impatient = UploadStoreFactory.testConfiguration
    impatient.takeoverTimeout = 0.2
    let nodeA = try factory.open(directory.path, clock, UploadStoreFactory.testConfiguration, false)
    let nodeB = try factory.open(directory.path, clock, impatient, true)
    let upload = try nodeA.create(newUpload(length: 10_000))
    let holder = try nodeA.writer(upload.id, offset: 0)
    try holder.write(sampleBytes(3_000, seed: 9))
    try holder.commit()
    // Silent from here on: it never flushes, so it never hears that node B wants the upload.
    let error = #expect(throws: StorageError.self) { try nodeB.writer(upload.id, offset: 3_000) }
    #expect(error?.code == .inProgress)
    #expect(try nodeB.settledState(tenant: "acme", id: upload.id)?.offset == 3_000)
    #expect(!holder.isPreempted)
  }

  @Test(arguments: UploadStoreFactory.all)
  func manyUploadsWrittenFromManyThreadsAllLandIntact(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let failures = Failures()
    onThreads(16) { worker in
      do {
        let bytes = sampleBytes(20_000 + worker * 999, seed: UInt64(100 + worker))
        let upload = try store.create(newUpload(length: worker % 2 == 0 ? bytes.count : nil))
        try store.put(upload.id, bytes, at: 0)
        if try store.completedBytes(upload.id) != bytes { failures.add("worker \(worker): other bytes") }
      } catch {
        failures.add("worker \(worker): \(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
  }

  @Test(arguments: UploadStoreFactory.all)
  func writersRacingForOneUploadOnlyEverCommitTheRightBytes(factory: UploadStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.open(directory.path, TestClock(), UploadStoreFactory.testConfiguration, false)
    let bytes = sampleBytes(200_000, seed: 8)
    let upload = try store.create(newUpload(length: bytes.count))
    let failures = Failures()
    let takeovers = CallCounter()
    // Eight "clients" resume the same upload over and over, each taking it from the others.
    onThreads(8) { worker in
      for round in 0..<200 {
        do {
          guard let state = try store.settledState(tenant: "acme", id: upload.id), !state.isComplete,
            state.offset < bytes.count
          else { return }
          let writer = try store.openWriter(tenant: "acme", id: upload.id, offset: state.offset, length: nil)
          {
            takeovers.increment()
          }
          let end = min(bytes.count, writer.upload.offset + 1_000 + (worker * 977 + round * 131) % 9_000)
          try writer.write(bytes[writer.upload.offset..<end], slice: 500)
          try writer.close()
        } catch let error as StorageError where error.code == .preempted || error.code == .offsetMismatch {
          continue  // another client got there first: resume again, as a phone would
        } catch {
          failures.add("worker \(worker): \(error)")
          return
        }
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    #expect(try store.state(tenant: "acme", id: upload.id)?.offset == bytes.count)
    #expect(try store.completedBytes(upload.id) == bytes)
  }
}
