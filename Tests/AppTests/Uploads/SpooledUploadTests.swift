import Foundation
import TestSupport
import Testing

@testable import App

/// Plain uploads over `uploads.spoolThreshold` stream to the upload store and are read in
/// place: the answer is the one an in-memory upload of the same bytes gets, and nothing is
/// left in the spool directory however the request ends.
@Suite(
  .serialized, .timeLimit(.minutes(2)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct SpooledUploadTests {
  static let jpeg = "jpeg-orient-6.jpg"
  static let png = "png-palette-trns.png"

  /// A server spooling every body over `threshold` bytes.
  static func server(threshold: Int = 1024) throws -> AttachmentServer {
    try AttachmentServer { config in
      config.uploads.spoolThreshold = threshold
      config.uploads.writeBufferBytes = 16 << 10
    }
  }

  /// Files in the spool directory (empty once every upload ended).
  static func spoolFiles(_ server: AttachmentServer) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: server.directory + "/data/uploads")) ?? []
  }

  /// The record fields that depend on the bytes only.
  static func facts(_ record: [String: Any]) -> [String] {
    let source = record["source"] as? [String: Any] ?? [:]
    return [
      "\(record["sha256"] ?? "")", "\(record["width"] ?? "")", "\(record["height"] ?? "")",
      "\(record["bytes"] ?? "")", "\(source["bytes"] ?? "")", "\(source["format"] ?? "")",
    ]
  }

  @Test func aSpooledRawBodyAnswersWhatAnInMemoryOneDoes() throws {
    let spooled = try Self.server()
    defer { spooled.stop() }
    let memory = try AttachmentServer()
    defer { memory.stop() }
    let path = UploadClientTests.corpusPath(Self.jpeg)
    let a = try spooled.upload(file: path)
    let b = try memory.upload(file: path)
    #expect(a.status == 201 && b.status == 201)
    #expect(Self.facts(try #require(a.json)) == Self.facts(try #require(b.json)))
    #expect(a.headers["content-type"] == b.headers["content-type"])
    #expect(a.headers["location"]?.hasPrefix("/v1/attachments/att_") == true)
    #expect(Self.spoolFiles(spooled).isEmpty)
  }

  @Test func aChunkedBodyCrossingTheThresholdIsSpooledFromThatPointOn() throws {
    let server = try Self.server(threshold: 64 << 10)
    defer { server.stop() }
    let reply = try server.upload(
      file: UploadClientTests.corpusPath(Self.jpeg), headers: ["Transfer-Encoding: chunked"])
    #expect(reply.status == 201)
    let id = try #require(reply.json?["id"] as? String)
    let expected = try UploadClientTests.expected(Self.jpeg, server.app.configuration.attachments)
    #expect(try UploadClientTests.fetch(server, id) == expected)
    #expect(Self.spoolFiles(server).isEmpty)
  }

  @Test(arguments: [false, true])
  func aSpooledMultipartBodyHasItsPartsCutOutOfTheMapping(chunked: Bool) throws {
    let server = try Self.server(threshold: chunked ? 100 << 10 : 1024)
    defer { server.stop() }
    let bad = server.directory + "/notes.txt"
    try Data("not an image at all".utf8).write(to: URL(fileURLWithPath: bad))
    var arguments = [
      "-H", AttachmentServer.bearer(AttachmentServer.acmeKey), "-F",
      "file=@" + UploadClientTests.corpusPath(Self.jpeg), "-F", "file=@" + bad, "-F",
      "file=@" + UploadClientTests.corpusPath(Self.png), "-F", "comment=ignored",
    ]
    if chunked { arguments += ["-H", "Transfer-Encoding: chunked"] }
    let reply = try server.curl("/v1/attachments", arguments)
    #expect(reply.status == 201)
    let list = try #require(reply.jsonList)
    #expect(list.count == 3)
    #expect(list[1]["code"] as? String == "unsupported_format")
    let first = try #require(list[0]["id"] as? String)
    let third = try #require(list[2]["id"] as? String)
    let options = server.app.configuration.attachments
    #expect(try UploadClientTests.fetch(server, first) == UploadClientTests.expected(Self.jpeg, options))
    #expect(try UploadClientTests.fetch(server, third) == UploadClientTests.expected(Self.png, options))
    #expect(Self.spoolFiles(server).isEmpty)
  }

  @Test func aSpooledBodyOverTheLimitIsRefusedAndLeavesNothing() throws {
    let server = try AttachmentServer { config in
      config.uploads.spoolThreshold = 1024
      config.attachments.maxUploadBytes = 20_000
    }
    defer { server.stop() }
    let reply = try server.upload(
      file: UploadClientTests.corpusPath(Self.jpeg), headers: ["Transfer-Encoding: chunked"])
    #expect(reply.status == 413)
    #expect(reply.code == "payload_too_large")
    #expect(LiveTesting.waitUntil(seconds: 5) { Self.spoolFiles(server).isEmpty })
  }

  @Test func aSpooledBodyWhoseClientLeavesIsDeleted() throws {
    let server = try Self.server()
    defer { server.stop() }
    let port = Int(server.base.split(separator: ":").last!)!
    let client = try RawHTTPClient(port: port)
    try client.send(
      "POST /v1/attachments HTTP/1.1\r\nHost: x\r\n\(AttachmentServer.bearer(AttachmentServer.acmeKey))\r\n"
        + "Content-Length: 100000\r\n\r\n")
    try client.send([UInt8](repeating: 0xFF, count: 30_000))
    #expect(LiveTesting.waitUntil(seconds: 5) { !Self.spoolFiles(server).isEmpty })
    client.close()
    #expect(LiveTesting.waitUntil(seconds: 5) { Self.spoolFiles(server).isEmpty })
    #expect(server.app.uploads.engine.streamingBodies == 0)
  }

  @Test func anIdempotentSpooledUploadIsReplayed() throws {
    let server = try Self.server()
    defer { server.stop() }
    let path = UploadClientTests.corpusPath(Self.png)
    let first = try server.upload(file: path, headers: ["Idempotency-Key: spool-1"])
    let second = try server.upload(file: path, headers: ["Idempotency-Key: spool-1"])
    #expect(first.status == 201 && second.status == 201)
    #expect(first.body == second.body)
    #expect(second.headers["idempotent-replayed"] == "true")
    let other = try server.upload(
      file: UploadClientTests.corpusPath(Self.jpeg), headers: ["Idempotency-Key: spool-1"])
    #expect(other.status == 422)
  }
}
