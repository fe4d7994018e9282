import Crypto
import Foundation
import Storage
import Testing

/// Keys no file system would like: spaces, `+`, `~`, unicode, reserved and control characters.
let awkwardKeys = [
  "plain.bin", "with space.jpg", "plus+sign", "tilde~name", "ünïcödé/日本語.heic", "📷 photo.png",
  "percent%20literal", "q?uestion#hash&amp=eq", "semi;colon,comma:colon", "*star'quote(paren)!",
  "\"dq\" <angle> [square] {curly}", "tab\tand\u{7F}",
]

/// Keys that look like paths to normalise: S3 keeps them as they are, so must the URL.
let pathLikeKeys = ["a/../b", "./dot/./x", "double//slash", "trailing/", "/leading"]

/// What the client puts on the wire, captured by a local server and checked against the SigV4
/// specification independently of the client (`SigV4Verifier`); SeaweedFS accepts requests AWS
/// would refuse, so passing against it proves less.
@Suite(.timeLimit(.minutes(1)))
struct S3SigningTests {
  static let accessKeyId = "AKIACAPTURE0123456789"
  static let secretAccessKey = "capture/Secret+Key=0123456789abcdefABCDEF"
  let verifier = SigV4Verifier(
    accessKeyId: accessKeyId, secretAccessKey: secretAccessKey, region: "eu-west-3")

  static func client(for server: ScriptedHTTPServer, bucket: String = "capture-bucket") throws -> S3Client {
    try S3Client(
      configuration: S3Client.Configuration(
        endpoint: "http://127.0.0.1:\(server.port)", bucket: bucket, region: "eu-west-3",
        accessKeyId: accessKeyId, secretAccessKey: secretAccessKey,
        timeouts: S3Client.Timeouts(connect: 2, idle: 2, request: 10), retry: S3Client.Retry(maxAttempts: 1)))
  }

  @Test(arguments: awkwardKeys + pathLikeKeys)
  func awkwardKeysAreSentCanonicallyAndSignedAsAWSWouldCheck(key: String) throws {
    let server = try ScriptedHTTPServer { request, _ in
      request.method == "HEAD"
        ? .respond(
          200, headers: [("Last-Modified", "Tue, 01 Dec 2026 19:12:42 GMT"), ("Content-Length", "3")])
        : .respond(200, headers: [("ETag", "\"e\"")])
    }
    defer { server.stop() }
    let client = try Self.client(for: server)
    let body = Array("abc".utf8)
    try body.withUnsafeBytes { _ = try client.putObject(key, body: .bytes($0)) }
    _ = try client.headObject(key)
    try client.deleteObject(key)
    let requests = server.requests
    #expect(requests.map(\.method) == ["PUT", "HEAD", "DELETE"])
    for request in requests {
      #expect(verifier.problem(with: request, bucket: "capture-bucket", key: key) == nil, "\(request.method)")
    }
  }

  @Test func rangeQueryAndMultipartRequestsAreSignedCanonically() throws {
    let listing = """
      <?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>
      """
    let initiated =
      "<InitiateMultipartUploadResult><UploadId>id/with+odd=chars</UploadId></InitiateMultipartUploadResult>"
    let server = try ScriptedHTTPServer { request, _ in
      switch (request.method, request.target) {
      case ("GET", let target) where target.contains("list-type"):
        .respond(200, body: Array(listing.utf8))
      case ("GET", _):
        .respond(206, headers: [("Content-Range", "bytes 5-9/100")], body: Array("56789".utf8))
      case ("POST", let target) where target.contains("uploads="):
        .respond(200, body: Array(initiated.utf8))
      case ("POST", _):
        .respond(
          200,
          body: Array(
            "<CompleteMultipartUploadResult><ETag>\"x-2\"</ETag></CompleteMultipartUploadResult>".utf8))
      default:
        .respond(200, headers: [("ETag", "\"p\"")])
      }
    }
    defer { server.stop() }
    let client = try Self.client(for: server)
    let key = "dir with space/ключ+~.bin"
    var read: [UInt8] = []
    try client.getObject(key, range: 5..<10) { read += $0 }
    #expect(read == Array("56789".utf8))
    _ = try client.listObjects(prefix: "a b+c/", continuationToken: "tok/en+=", maxKeys: 7)
    let upload = try client.createMultipartUpload(key)
    #expect(upload.uploadId == "id/with+odd=chars")
    let part = try [UInt8](repeating: 7, count: 100).withUnsafeBytes {
      try client.uploadPart(upload, number: 1, body: .bytes($0))
    }
    try client.completeMultipartUpload(upload, parts: [part])
    try client.abortMultipartUpload(upload)

    let requests = server.requests
    try #require(requests.count == 6)
    let bucket = "capture-bucket"
    #expect(verifier.problem(with: requests[0], bucket: bucket, key: key) == nil)
    #expect(requests[0].header("range") == "bytes=5-9")
    let listQuery = [
      ("list-type", "2"), ("prefix", "a b+c/"), ("max-keys", "7"), ("encoding-type", "url"),
      ("continuation-token", "tok/en+="),
    ]
    #expect(verifier.problem(with: requests[1], bucket: bucket, key: nil, query: listQuery) == nil)
    #expect(verifier.problem(with: requests[2], bucket: bucket, key: key, query: [("uploads", "")]) == nil)
    let partQuery = [("partNumber", "1"), ("uploadId", "id/with+odd=chars")]
    #expect(verifier.problem(with: requests[3], bucket: bucket, key: key, query: partQuery) == nil)
    let uploadQuery = [("uploadId", "id/with+odd=chars")]
    #expect(verifier.problem(with: requests[4], bucket: bucket, key: key, query: uploadQuery) == nil)
    #expect(verifier.problem(with: requests[5], bucket: bucket, key: key, query: uploadQuery) == nil)
    #expect(
      String(decoding: requests[4].body, as: UTF8.self).contains(
        "<PartNumber>1</PartNumber><ETag>\"p\"</ETag>"))
  }

  @Test func payloadHashIsTheSHA256OfTheBytesSentAndEveryBodyIsSized() throws {
    let server = try ScriptedHTTPServer { _, _ in .respond(200, headers: [("ETag", "\"e\"")]) }
    defer { server.stop() }
    let client = try Self.client(for: server)
    let directory = try TemporaryDirectory()
    let file = directory.path + "/body.bin"
    let fileBytes = sampleBytes(3_000_000, seed: 21)  // large enough for `Expect: 100-continue`
    try Data(fileBytes).write(to: URL(fileURLWithPath: file))
    let memory = sampleBytes(70_001, seed: 22)

    try memory.withUnsafeBytes { _ = try client.putObject("memory", body: .bytes($0)) }
    try [UInt8]().withUnsafeBytes { _ = try client.putObject("empty", body: .bytes($0)) }
    try client.putObject("file", body: .file(path: file))
    try client.putObject("file-range", body: .file(path: file, range: 1_000..<2_501_000))
    let upload = S3MultipartUpload(key: "multi", uploadId: "u")
    _ = try client.uploadPart(upload, number: 2, body: .file(path: file, range: 7..<1_000_007))

    let expected = [
      memory, [], fileBytes, Array(fileBytes[1_000..<2_501_000]), Array(fileBytes[7..<1_000_007]),
    ]
    let requests = server.requests
    try #require(requests.count == expected.count)
    for (request, bytes) in zip(requests, expected) {
      #expect(request.body == bytes, "\(request.target)")
      // Computed here from the bytes that arrived, not from anything the client reports.
      #expect(
        request.header("x-amz-content-sha256") == Hex.encode(SHA256.hash(request.body)), "\(request.target)")
      #expect(request.header("content-length") == String(bytes.count), "\(request.target)")
      #expect(request.header("transfer-encoding") == nil, "\(request.target)")
      #expect(request.header("authorization")?.contains("x-amz-content-sha256") == true)
    }
    #expect(requests.map(\.method) == ["PUT", "PUT", "PUT", "PUT", "PUT"])
  }

  @Test func theVerifierRefusesWhatAWSWouldRefuse() throws {
    let server = try ScriptedHTTPServer { _, _ in .respond(200, headers: [("ETag", "\"e\"")]) }
    defer { server.stop() }
    try Array("abc".utf8).withUnsafeBytes {
      _ = try Self.client(for: server).putObject("a b", body: .bytes($0))
    }
    let request = try #require(server.requests.first)
    #expect(verifier.problem(with: request, bucket: "capture-bucket", key: "a b") == nil)
    // Another secret, another key, a changed signed header, another payload hash: all refused.
    let wrongSecret = SigV4Verifier(
      accessKeyId: Self.accessKeyId, secretAccessKey: "other", region: "eu-west-3")
    #expect(wrongSecret.problem(with: request, bucket: "capture-bucket", key: "a b") != nil)
    #expect(verifier.problem(with: request, bucket: "capture-bucket", key: "a+b") != nil)
    var changed = request
    changed.headers = changed.headers.map {
      $0.name.lowercased() == "x-amz-content-sha256" ? ($0.name, S3Client.emptySHA256) : $0
    }
    #expect(verifier.problem(with: changed, bucket: "capture-bucket", key: "a b") != nil)
    changed = request
    changed.method = "DELETE"
    #expect(verifier.problem(with: changed, bucket: "capture-bucket", key: "a b") != nil)
  }

  @Test func bodilessRequestsSignTheEmptyPayloadHash() throws {
    let server = try ScriptedHTTPServer { _, _ in .respond(204) }
    defer { server.stop() }
    let client = try Self.client(for: server)
    try client.deleteObject("k")
    let request = try #require(server.requests.first)
    #expect(request.header("x-amz-content-sha256") == Hex.encode(SHA256.hash([UInt8]())))
    #expect(request.header("x-amz-content-sha256") == S3Client.emptySHA256)
    #expect(verifier.problem(with: request, bucket: "capture-bucket", key: "k") == nil)
  }
}
