import Crypto
import Foundation
import Storage
import TestSupport
import Testing

/// Multipart uploads against SeaweedFS: parts of 5 MiB and a short last one, in any order, from
/// memory and from file ranges; listing parts and pending uploads; abort.
@Suite(.timeLimit(.minutes(2)))
struct S3MultipartTests {
  let client: S3Client
  let prefix: String
  static let partSize = S3Client.minimumPartSize

  init() throws {
    client = try S3Client(configuration: SharedBucket.configuration("multipart"))
    prefix = SharedBucket.uniquePrefix("multipart")
  }

  @Test func partsUploadedInAnyOrderAssembleIntoTheObject() throws {
    let key = prefix + "assembled object.bin"
    let bytes = sampleBytes(2 * Self.partSize + 1_234, seed: 31)
    let directory = try TemporaryDirectory()
    let file = directory.path + "/whole.bin"
    try Data(bytes).write(to: URL(fileURLWithPath: file))

    let upload = try client.createMultipartUpload(key, contentType: "application/octet-stream")
    #expect(upload.key == key && !upload.uploadId.isEmpty)
    // Part 2 first, from memory; parts 1 and 3 from ranges of the file.
    let second = try bytes[Self.partSize..<(2 * Self.partSize)].withUnsafeBytes {
      try client.uploadPart(upload, number: 2, body: .bytes($0))
    }
    let first = try client.uploadPart(upload, number: 1, body: .file(path: file, range: 0..<Self.partSize))
    let third = try client.uploadPart(
      upload, number: 3, body: .file(path: file, range: (2 * Self.partSize)..<bytes.count))
    #expect([first.size, second.size, third.size] == [Self.partSize, Self.partSize, 1_234] as [Int])

    let listed = try client.listParts(upload)
    #expect(listed.map(\.number) == [1, 2, 3])
    #expect(listed.map(\.size) == [Self.partSize, Self.partSize, 1_234])
    let unquoted: (S3UploadedPart) -> String = {
      $0.etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
    #expect(listed.map(unquoted) == [first, second, third].map(unquoted))
    let pending = try client.listMultipartUploads(prefix: prefix)
    #expect(pending.map(\.upload).contains(upload))

    try client.completeMultipartUpload(upload, parts: [first, second, third])
    #expect(try client.headObject(key)?.size == bytes.count)
    let hasher = SHA256()
    var count = 0
    try client.getObject(key) {
      hasher.update($0)
      count += $0.count
    }
    #expect(count == bytes.count)
    #expect(hasher.finalizeHex() == Hex.encode(SHA256.hash(bytes)))
    #expect(try !client.listMultipartUploads(prefix: prefix).map(\.upload).contains(upload))
  }

  @Test func aReuploadedPartReplacesTheEarlierOne() throws {
    let key = prefix + "replaced"
    let upload = try client.createMultipartUpload(key)
    _ = try [UInt8](repeating: 1, count: 10).withUnsafeBytes {
      try client.uploadPart(upload, number: 1, body: .bytes($0))
    }
    let again = try [UInt8](repeating: 2, count: 20).withUnsafeBytes {
      try client.uploadPart(upload, number: 1, body: .bytes($0))
    }
    // AWS lists the number once; SeaweedFS 4.48 lists both uploads of it (what completion uses
    // is what counts).
    #expect(try client.listParts(upload).contains(again))
    try client.completeMultipartUpload(upload, parts: [again])
    var read: [UInt8] = []
    try client.getObject(key) { read += $0 }
    #expect(read == [UInt8](repeating: 2, count: 20))
  }

  @Test func abortedUploadIsGoneAndLeavesNoObject() throws {
    let key = prefix + "aborted"
    let upload = try client.createMultipartUpload(key)
    _ = try sampleBytes(Self.partSize, seed: 32).withUnsafeBytes {
      try client.uploadPart(upload, number: 1, body: .bytes($0))
    }
    try client.abortMultipartUpload(upload)
    let listing = #expect(throws: StorageError.self) { try client.listParts(upload) }
    #expect(listing?.code == .notFound)
    #expect(try !client.listMultipartUploads(prefix: prefix).map(\.upload).contains(upload))
    #expect(try client.headObject(key) == nil)
    try client.abortMultipartUpload(upload)  // twice is not an error
    let late = #expect(throws: StorageError.self) {
      try [UInt8(1)].withUnsafeBytes { _ = try client.uploadPart(upload, number: 2, body: .bytes($0)) }
    }
    #expect(late?.code == .notFound)
  }

  @Test func partRulesAreCheckedBeforeAnyRequest() throws {
    // An endpoint nothing listens on: a rule broken must fail before the network is touched.
    var configuration = try SharedBucket.configuration("multipart")
    configuration.endpoint = "http://127.0.0.1:9"
    let offline = try S3Client(configuration: configuration)
    let upload = S3MultipartUpload(key: "k", uploadId: "u")
    let small = S3UploadedPart(number: 1, etag: "\"a\"", size: Self.partSize - 1)
    let full = S3UploadedPart(number: 2, etag: "\"b\"", size: Self.partSize)
    let cases: [[S3UploadedPart]] = [
      [], [small, full], [full, S3UploadedPart(number: 1, etag: "\"a\"", size: Self.partSize)],
      [full, full],
    ]
    for parts in cases {
      let error = #expect(throws: StorageError.self) {
        try offline.completeMultipartUpload(upload, parts: parts)
      }
      #expect(error?.code == .invalidArgument, "\(parts.map(\.number))")
    }
    for number in [0, 10_001] {
      let error = #expect(throws: StorageError.self) {
        try [UInt8(1)].withUnsafeBytes {
          _ = try offline.uploadPart(upload, number: number, body: .bytes($0))
        }
      }
      #expect(error?.code == .invalidArgument)
    }
    // The last part alone may be small.
    let unreachable = #expect(throws: StorageError.self) {
      try offline.completeMultipartUpload(
        upload, parts: [full, S3UploadedPart(number: 3, etag: "\"c\"", size: 1)])
    }
    #expect(unreachable?.code == .unavailable)
  }
}
