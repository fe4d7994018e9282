import Crypto
import Foundation
import Storage
import Testing
import TestSupport

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
}
