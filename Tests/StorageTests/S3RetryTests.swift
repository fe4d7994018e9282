import Foundation
import Storage
import Testing

/// How the client treats failures, against a scripted local server: 5xx and broken connections
/// are retried (with backoff), a 4xx never; an idle server times out; a GET cut short resumes.
@Suite(.timeLimit(.minutes(1)))
struct S3RetryTests {
  static let retry = S3Client.Retry(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.05)

  static func client(
    port: Int, retry: S3Client.Retry = retry,
    timeouts: S3Client.Timeouts = S3Client.Timeouts(connect: 2, idle: 2, request: 10)
  ) throws -> S3Client {
    try S3Client(
      configuration: S3Client.Configuration(
        endpoint: "http://127.0.0.1:\(port)", bucket: "retries", accessKeyId: "AKIARETRYTESTS000001",
        secretAccessKey: "retry-secret-0123456789", timeouts: timeouts, retry: retry))
  }

  static func xmlError(_ code: String) -> [UInt8] {
    Array("<?xml version=\"1.0\"?><Error><Code>\(code)</Code><Message>scripted</Message></Error>".utf8)
  }

  @Test(arguments: [500, 502, 503, 504])
  func aServerErrorIsRetriedUntilItSucceeds(status: Int) throws {
    let server = try ScriptedHTTPServer { _, index in
      index < 2
        ? .respond(status, body: Self.xmlError("SlowDown")) : .respond(200, headers: [("ETag", "\"ok\"")])
    }
    defer { server.stop() }
    let etag = try [UInt8(1), 2, 3].withUnsafeBytes {
      try Self.client(port: server.port).putObject("k", body: .bytes($0))
    }
    #expect(etag == "\"ok\"")
    #expect(server.requests.count == 3)
    // Each attempt sends the whole body again.
    #expect(server.requests.allSatisfy { $0.body == [1, 2, 3] })
  }

  @Test func serverErrorsThatNeverStopAreUnavailableAfterEveryAttempt() throws {
    let server = try ScriptedHTTPServer { _, _ in .respond(503, body: Self.xmlError("ServiceUnavailable")) }
    defer { server.stop() }
    let error = #expect(throws: StorageError.self) { try Self.client(port: server.port).headObject("k") }
    #expect(error?.code == .unavailable)
    #expect(server.requests.count == 3)
    #expect(error?.description.contains("503") == true)
  }

  @Test(arguments: [
    (400, StorageError.Code.io), (403, .io), (404, .notFound), (405, .io), (409, .conflict),
    (412, .conflict), (429, .io),
  ])
  func aClientErrorIsNeverRetried(status: Int, code: StorageError.Code) throws {
    let server = try ScriptedHTTPServer { _, _ in .respond(status, body: Self.xmlError("Scripted\(status)")) }
    defer { server.stop() }
    let client = try Self.client(port: server.port)
    let error = #expect(throws: StorageError.self) { try client.getObject("k") { _ in } }
    #expect(error?.code == code)
    #expect(error?.description.contains("Scripted\(status)") == true)
    #expect(server.requests.count == 1)
  }

  @Test func aDroppedConnectionIsRetried() throws {
    let server = try ScriptedHTTPServer { _, index in
      index == 0 ? .close : .respond(204)
    }
    defer { server.stop() }
    try Self.client(port: server.port).deleteObject("k")
    #expect(server.requests.count == 2)
  }

  @Test func aBodyCutShortIsResumedWhereItStopped() throws {
    let object = sampleBytes(300_000, seed: 41)
    let etag = "\"abc\""
    let server = try ScriptedHTTPServer { request, index in
      let headers = [("ETag", etag), ("Content-Type", "application/octet-stream")]
      if index == 0 {
        return .cut(200, headers: headers, body: object, sent: 123_457)
      }
      // "bytes=N-299999"
      let range = request.header("range") ?? ""
      let first = Int(range.dropFirst(6).prefix { $0 != "-" }) ?? 0
      return .respond(
        206, headers: headers + [("Content-Range", "bytes \(first)-299999/300000")],
        body: Array(object[first...]))
    }
    defer { server.stop() }
    var starts = 0
    var read: [UInt8] = []
    try Self.client(port: server.port).getObject("k", start: { _ in starts += 1 }, body: { read += $0 })
    #expect(read == object)
    #expect(starts == 1)
    let requests = server.requests
    try #require(requests.count == 2)
    #expect(requests[0].header("range") == nil)
    let resumedAt = Int(requests[1].header("range")?.dropFirst(6).prefix { $0 != "-" } ?? "") ?? -1
    #expect(resumedAt > 0 && resumedAt <= 123_457)
    #expect(requests[1].header("range") == "bytes=\(resumedAt)-299999")
    #expect(requests[1].header("if-match") == etag)
  }

  @Test func aSilentServerTimesOutAndIsUnavailableWithinTheBound() throws {
    let server = try ScriptedHTTPServer { _, _ in .hang }
    defer { server.stop() }
    let retry = S3Client.Retry(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)
    let timeouts = S3Client.Timeouts(connect: 1, idle: 1, request: 3)
    let client = try Self.client(port: server.port, retry: retry, timeouts: timeouts)
    let started = Date()
    let error = #expect(throws: StorageError.self) { try client.headObject("k") }
    let elapsed = Date().timeIntervalSince(started)
    #expect(error?.code == .unavailable)
    #expect(server.requests.count == 2)
    // Two idle timeouts of about a second each, well inside the configured worst case.
    #expect(elapsed >= 1.9 && elapsed <= client.configuration.worstCaseDuration, "\(elapsed) s")
  }

  @Test func nothingListeningIsUnavailableAtOnce() throws {
    let server = try ScriptedHTTPServer { _, _ in .respond(200) }
    server.stop()  // the port is now closed: connections are refused
    let client = try Self.client(port: server.port)
    let started = Date()
    let error = #expect(throws: StorageError.self) { try client.headObject("k") }
    #expect(error?.code == .unavailable)
    #expect(Date().timeIntervalSince(started) < 2)
    #expect(server.requests.isEmpty)
  }

  @Test func anErrorDocumentInsideA200IsRetriedAsS3Asks() throws {
    let done = "<CompleteMultipartUploadResult><ETag>\"whole-1\"</ETag></CompleteMultipartUploadResult>"
    let server = try ScriptedHTTPServer { _, index in
      index == 0 ? .respond(200, body: Self.xmlError("InternalError")) : .respond(200, body: Array(done.utf8))
    }
    defer { server.stop() }
    let client = try Self.client(port: server.port)
    let part = S3UploadedPart(number: 1, etag: "\"p\"", size: 1)
    let etag = try client.completeMultipartUpload(S3MultipartUpload(key: "k", uploadId: "u"), parts: [part])
    #expect(etag == "\"whole-1\"")
    #expect(server.requests.count == 2)
  }

  @Test func backoffStaysWithinItsCeilings() {
    let retry = S3Client.Retry(maxAttempts: 6, baseDelay: 0.1, maxDelay: 0.5)
    let configuration = S3Client.Configuration(
      endpoint: "http://127.0.0.1:1", bucket: "b-b", accessKeyId: "a", secretAccessKey: "s",
      timeouts: S3Client.Timeouts(connect: 1, idle: 1, request: 2), retry: retry)
    // 6 attempts of 2 s, then waits of at most 0.1, 0.2, 0.4, 0.5, 0.5 s.
    #expect(abs(configuration.worstCaseDuration - (12 + 1.7)) < 1e-9)
  }
}
