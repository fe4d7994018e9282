import Crypto
import Dispatch
import Foundation
import Storage
import Synchronization
import Testing

/// Makes one `BlobStore` implementation in a fresh directory; the suite runs once per factory.
struct BlobStoreFactory: Sendable, CustomTestStringConvertible {
  let name: String
  let make: @Sendable (String) throws -> any BlobStore
  var testDescription: String { name }

  static let all: [BlobStoreFactory] = [
    BlobStoreFactory(name: "FileBlobStore") { try FileBlobStore(root: $0) },
    // A key prefix of its own per test in one bucket of the shared SeaweedFS. refreshAge 0: every
    // re-put renews the date, as FileBlobStore's does, so the same test holds for both.
    BlobStoreFactory(name: "S3BlobStore") { _ in
      try S3BlobStore(
        configuration: S3BlobStore.Configuration(
          client: SharedBucket.configuration("conformance"), keyPrefix: SharedBucket.uniquePrefix("blobs"),
          refreshAge: 0))
    },
  ]
}

/// The behaviour every blob store must show (imgproxy's storage/testsuite is the model).
@Suite(.timeLimit(.minutes(2))) struct BlobStoreConformanceTests {
  @Test(arguments: BlobStoreFactory.all)
  func putBytesAreReadBackUnderTheirSHA256(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let bytes = sampleBytes(100_000, seed: 1)
    let hash = try store.put(bytes)
    #expect(hash.hex == Hex.encode(SHA256.hash(bytes)))
    #expect(try store.exists(hash))
    #expect(try store.size(of: hash) == bytes.count)
    #expect(try store.read(hash) == bytes)
  }

  @Test(arguments: BlobStoreFactory.all)
  func sameContentIsStoredOnce(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let bytes = sampleBytes(5_000, seed: 2)
    let first = try store.put(bytes)
    let second = try store.put(Data(bytes))
    let other = try store.put(sampleBytes(5_000, seed: 3))
    #expect(first == second)
    #expect(first != other)
    var listed: [BlobHash] = []
    try store.forEachBlob { listed.append($0.hash) }
    #expect(listed.sorted() == [first, other].sorted())
  }

  @Test(arguments: BlobStoreFactory.all)
  func rangeReadsReturnTheClampedSlice(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let bytes = sampleBytes(1_000, seed: 4)
    let hash = try store.put(bytes)
    #expect(try store.read(hash, range: 10..<20) == Array(bytes[10..<20]))
    #expect(try store.read(hash, range: 990..<2_000) == Array(bytes[990...]))
    #expect(try store.read(hash, range: 5_000..<6_000) == [])
    #expect(try store.read(hash, range: 0..<0) == [])
  }

  @Test(arguments: BlobStoreFactory.all)
  func emptyContentIsAValidBlob(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let hash = try store.put([UInt8]())
    #expect(hash.hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(try store.read(hash) == [])
    #expect(try store.size(of: hash) == 0)
  }

  @Test(arguments: BlobStoreFactory.all)
  func missingBlobIsNotFound(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let hash = BlobHash.of(sampleBytes(10, seed: 5))
    #expect(try !store.exists(hash))
    #expect(try !store.delete(hash))
    let readError = #expect(throws: StorageError.self) { try store.read(hash) }
    #expect(readError?.code == .notFound)
    let sizeError = #expect(throws: StorageError.self) { try store.size(of: hash) }
    #expect(sizeError?.code == .notFound)
  }

  @Test(arguments: BlobStoreFactory.all)
  func deleteRemovesOnlyThatBlob(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let kept = try store.put(sampleBytes(300, seed: 6))
    let removed = try store.put(sampleBytes(300, seed: 7))
    #expect(try store.delete(removed))
    #expect(try !store.exists(removed))
    #expect(try store.read(kept) == sampleBytes(300, seed: 6))
    // A deleted blob can be stored again.
    #expect(try store.put(sampleBytes(300, seed: 7)) == removed)
    #expect(try store.exists(removed))
  }

  @Test(arguments: BlobStoreFactory.all)
  func fileContentsAreStoredByPath(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path + "/store")
    let bytes = sampleBytes(700_000, seed: 8)  // several copy chunks
    let source = directory.path + "/upload.bin"
    try Data(bytes).write(to: URL(fileURLWithPath: source))
    let hash = try store.put(fileAt: source)
    #expect(hash == BlobHash.of(bytes))
    #expect(try store.read(hash) == bytes)
    // The same file again deduplicates to the same blob.
    #expect(try store.put(fileAt: source) == hash)
    let missing = #expect(throws: StorageError.self) { try store.put(fileAt: directory.path + "/nope") }
    #expect(missing?.code == .notFound)
  }

  @Test(arguments: BlobStoreFactory.all)
  func listingReportsEverySizeAndARecentModificationTime(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let start = Date().addingTimeInterval(-5)
    var expected: [BlobHash: Int] = [:]
    for seed in 0..<20 {
      let bytes = sampleBytes(100 + seed, seed: UInt64(100 + seed))
      expected[try store.put(bytes)] = bytes.count
    }
    var listed: [BlobHash: Int] = [:]
    try store.forEachBlob { info in
      listed[info.hash] = info.size
      #expect(info.modified > start)
    }
    #expect(listed == expected)
  }

  @Test(arguments: BlobStoreFactory.all)
  func concurrentPutsAllLandIntact(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    // 16 writers: half share one content (racing dedup), half write their own.
    let failures = Failures()
    onThreads(16) { worker in
      let seed: UInt64 = worker % 2 == 0 ? 999 : UInt64(worker)
      let bytes = sampleBytes(200_000, seed: seed)
      do {
        let hash = try store.put(bytes)
        if try store.read(hash) != bytes { failures.add("worker \(worker) read back other bytes") }
      } catch {
        failures.add("worker \(worker): \(error)")
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    var count = 0
    try store.forEachBlob { _ in count += 1 }
    #expect(count == 9)
  }

  @Test(arguments: BlobStoreFactory.all)
  func rePutRenewsTheModificationTime(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let hash = try store.put(sampleBytes(2_000, seed: 9))
    let first = try #require(try modified(hash, in: store))
    // S3 dates have whole seconds.
    Thread.sleep(forTimeInterval: 1.1)
    #expect(try store.put(sampleBytes(2_000, seed: 9)) == hash)
    let second = try #require(try modified(hash, in: store))
    #expect(second > first)
  }

  @Test(arguments: BlobStoreFactory.all)
  func streamingReadDeliversTheRangeInChunks(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let bytes = sampleBytes(900_000, seed: 10)
    let hash = try store.put(bytes)
    for (range, expected) in [
      (nil, 0..<900_000), (1_000..<5_000, 1_000..<5_000), (899_000..<1_000_000, 899_000..<900_000),
      (950_000..<960_000, 900_000..<900_000), (20..<20, 20..<20),
    ] as [(Range<Int>?, Range<Int>)] {
      var starts: [BlobReadStart] = []
      var chunks: [[UInt8]] = []
      try store.read(hash, range: range, start: { starts.append($0) }, body: { chunks.append(Array($0)) })
      #expect(starts == [BlobReadStart(size: bytes.count, range: expected)], "\(String(describing: range))")
      #expect(chunks.flatMap { $0 } == Array(bytes[expected]), "\(String(describing: range))")
      #expect(!chunks.contains { $0.isEmpty })
      if range == nil { #expect(chunks.count > 1, "a whole 900 kB blob arrives in several chunks") }
    }
  }

  @Test(arguments: BlobStoreFactory.all)
  func streamingReadStopsWithTheConsumersError(factory: BlobStoreFactory) throws {
    struct ClientGone: Error {}
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    let hash = try store.put(sampleBytes(800_000, seed: 11))
    var calls = 0
    #expect(throws: ClientGone.self) {
      try store.read(hash) { _ in
        calls += 1
        throw ClientGone()
      }
    }
    #expect(calls == 1)
    #expect(throws: ClientGone.self) {
      try store.read(hash, range: nil, start: { _ in throw ClientGone() }, body: { _ in })
    }
    // The store is fine afterwards.
    #expect(try store.read(hash, range: 0..<3) == Array(sampleBytes(800_000, seed: 11)[0..<3]))
  }

  @Test(arguments: BlobStoreFactory.all)
  func streamingReadOfAMissingBlobIsNotFoundBeforeAnyStart(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    var started = false
    for range in [nil, 0..<10, 5..<5] as [Range<Int>?] {
      let error = #expect(throws: StorageError.self) {
        try store.read(
          BlobHash.of(sampleBytes(10, seed: 12)), range: range, start: { _ in started = true }, body: { _ in }
        )
      }
      #expect(error?.code == .notFound)
    }
    #expect(!started)
  }

  @Test(arguments: BlobStoreFactory.all)
  func freshStoreIsWritable(factory: BlobStoreFactory) throws {
    let directory = try TemporaryDirectory()
    let store = try factory.make(directory.path)
    try store.checkWritable()
    var count = 0
    try store.forEachBlob { _ in count += 1 }
    #expect(count == 0)
  }
}

/// The modification time a store's listing reports for `hash`.
func modified(_ hash: BlobHash, in store: any BlobStore) throws -> Date? {
  var found: Date? = nil
  try store.forEachBlob { if $0.hash == hash { found = $0.modified } }
  return found
}

/// Collects failure messages from concurrent workers.
final class Failures: Sendable {
  private let messages = Mutex<[String]>([])
  func add(_ message: String) { messages.withLock { $0.append(message) } }
  var all: [String] { messages.withLock { $0 } }
}
