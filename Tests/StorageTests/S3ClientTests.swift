import Crypto
import Foundation
import Storage
import TestSupport
import Testing

/// The S3 client against a real SeaweedFS: objects, awkward keys, ranges, listing pages.
@Suite(.timeLimit(.minutes(2)))
struct S3ClientTests {
  let client: S3Client
  let prefix: String

  init() throws {
    client = try S3Client(configuration: SharedBucket.configuration("s3client"))
    prefix = SharedBucket.uniquePrefix("client")
  }

  @Test func putGetHeadDeleteRoundTrip() throws {
    let key = prefix + "object.bin"
    let bytes = sampleBytes(70_000, seed: 11)
    let etag = try bytes.withUnsafeBytes { try client.putObject(key, body: .bytes($0)) }
    #expect(etag != nil)
    let info = try #require(try client.headObject(key))
    #expect(info.size == bytes.count)
    #expect(abs(info.lastModified.timeIntervalSinceNow) < 60)
    #expect(info.etag == etag)
    var read: [UInt8] = []
    let start = try client.getObject(key) { read += $0 }
    #expect(read == bytes)
    #expect(start.objectSize == bytes.count && start.range == 0..<bytes.count)
    try client.deleteObject(key)
    #expect(try client.headObject(key) == nil)
    let missing = #expect(throws: StorageError.self) { try client.getObject(key) { _ in } }
    #expect(missing?.code == .notFound)
  }

  // Not `pathLikeKeys`: SeaweedFS stores keys as file paths, refusing dot segments and merging
  // `//` and a trailing `/`, where AWS keeps them; S3SigningTests covers those on the wire.
  @Test func awkwardKeysRoundTripAndListAsThemselves() throws {
    var stored: [String: [UInt8]] = [:]
    for (index, name) in awkwardKeys.enumerated() {
      let key = prefix + name
      let bytes = sampleBytes(100 + index, seed: UInt64(index))
      try bytes.withUnsafeBytes { _ = try client.putObject(key, body: .bytes($0)) }
      stored[key] = bytes
    }
    for (key, bytes) in stored {
      var read: [UInt8] = []
      try client.getObject(key) { read += $0 }
      #expect(read == bytes, "\(key)")
      #expect(try client.headObject(key)?.size == bytes.count, "\(key)")
    }
    var listed: [String: Int] = [:]
    try client.forEachObject(prefix: prefix) { listed[$0.key] = $0.size }
    #expect(listed == stored.mapValues(\.count))
    for key in stored.keys { try client.deleteObject(key) }
    var left = 0
    try client.forEachObject(prefix: prefix) { _ in left += 1 }
    #expect(left == 0)
  }

  @Test func rangesAreClampedToTheObject() throws {
    let key = prefix + "ranges"
    let bytes = sampleBytes(10_000, seed: 12)
    try bytes.withUnsafeBytes { _ = try client.putObject(key, body: .bytes($0)) }
    let cases: [(Range<Int>, Range<Int>)] = [
      (0..<1, 0..<1), (9_999..<10_000, 9_999..<10_000), (5_000..<20_000, 5_000..<10_000),
      (10_000..<10_001, 10_000..<10_000), (50_000..<60_000, 10_000..<10_000), (7..<7, 7..<7),
    ]
    for (asked, delivered) in cases {
      var read: [UInt8] = []
      let start = try client.getObject(key, range: asked) { read += $0 }
      #expect(start.range == delivered, "\(asked)")
      #expect(start.objectSize == bytes.count)
      #expect(read == Array(bytes[delivered]), "\(asked)")
    }
    let negative = #expect(throws: StorageError.self) { try client.getObject(key, range: -1..<3) { _ in } }
    #expect(negative?.code == .invalidArgument)
  }

  @Test func listingWalksEveryContinuationPage() throws {
    let listing = prefix + "pages/"
    let keys = (0..<25).map { listing + String(format: "item %02d+", $0) }
    for key in keys { try [UInt8(1)].withUnsafeBytes { _ = try client.putObject(key, body: .bytes($0)) } }
    let first = try client.listObjects(prefix: listing, maxKeys: 10)
    #expect(first.objects.map(\.key) == Array(keys[0..<10]))
    let token = try #require(first.nextContinuationToken)
    let second = try client.listObjects(prefix: listing, continuationToken: token, maxKeys: 10)
    #expect(second.objects.map(\.key) == Array(keys[10..<20]))
    var all: [String] = []
    try client.forEachObject(prefix: listing, pageSize: 10) { all.append($0.key) }
    #expect(all == keys)
    let last = try client.listObjects(
      prefix: listing, continuationToken: second.nextContinuationToken, maxKeys: 10)
    #expect(last.objects.count == 5 && last.nextContinuationToken == nil)
  }

  @Test func objectsStreamFromAndToFiles() throws {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/source.bin"
    let bytes = sampleBytes(1_500_000, seed: 13)
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let key = prefix + "from-file"
    try client.putObject(key, body: .file(path: path, range: 100..<1_400_100), contentType: "image/jpeg")
    var read: [UInt8] = []
    try client.getObject(key) { read += $0 }
    #expect(read == Array(bytes[100..<1_400_100]))
    let outside = #expect(throws: StorageError.self) {
      try client.putObject(key, body: .file(path: path, range: 0..<1_500_001))
    }
    #expect(outside?.code == .invalidArgument)
    let missing = #expect(throws: StorageError.self) {
      try client.putObject(key, body: .file(path: path + ".no"))
    }
    #expect(missing?.code == .notFound)
  }

  @Test func aWrongPayloadHashIsRefusedBeforeAnythingIsSent() throws {
    let bad = #expect(throws: StorageError.self) {
      try [UInt8(1)].withUnsafeBytes {
        _ = try client.putObject(prefix + "x", body: .bytes($0), sha256: "ABC")
      }
    }
    #expect(bad?.code == .invalidArgument)
  }

  @Test func copyRenewsTheDateAndKeepsTheBytes() throws {
    let key = prefix + "copied"
    let bytes = sampleBytes(3_000, seed: 14)
    try bytes.withUnsafeBytes { _ = try client.putObject(key, body: .bytes($0)) }
    let before = try #require(try client.headObject(key))
    Thread.sleep(forTimeInterval: 1.1)
    try client.copyObject(from: key, to: key)
    let after = try #require(try client.headObject(key))
    #expect(after.lastModified > before.lastModified)
    var read: [UInt8] = []
    try client.getObject(key) { read += $0 }
    #expect(read == bytes)
    let missing = #expect(throws: StorageError.self) { try client.copyObject(from: prefix + "none", to: key) }
    #expect(missing?.code == .notFound)
  }

  @Test func creatingAnOwnedBucketAgainSucceeds() throws {
    try client.createBucket()
  }
}
