import AttachdTesting
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
    let a = try spooled.post(file: path)
    let b = try memory.post(file: path)
    #expect(a.status == 201 && b.status == 201)
    #expect(Self.facts(try #require(a.json)) == Self.facts(try #require(b.json)))
    #expect(a["content-type"] == b["content-type"])
    #expect(a["location"]?.hasPrefix("/v1/attachments/att_") == true)
    #expect(Self.spoolFiles(spooled).isEmpty)
  }

  @Test func aChunkedBodyCrossingTheThresholdIsSpooledFromThatPointOn() throws {
    let server = try Self.server(threshold: 64 << 10)
    defer { server.stop() }
    let reply = try server.post(file: UploadClientTests.corpusPath(Self.jpeg), chunked: true)
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
    var form = MultipartForm()
    form.addFile("file", filename: Self.jpeg, [UInt8](try Corpus.data(Self.jpeg)), contentType: "image/jpeg")
    form.addFile("file", filename: "notes.txt", Array("not an image at all".utf8), contentType: "text/plain")
    form.addFile("file", filename: Self.png, [UInt8](try Corpus.data(Self.png)), contentType: "image/png")
    form.addField("comment", "ignored")
    let reply = try server.client.execute(
      "POST", "/v1/attachments",
      headers: AttachmentServer.auth(AttachmentServer.acmeKey) + ["Content-Type": form.contentType],
      body: chunked ? .chunked(form.body, size: 16 << 10) : .bytes(form.body))
    #expect(reply.status == 201)
    let list = try #require(reply.jsonArray)
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
      config.attachments.maxVideoBytes = 20_000
    }
    defer { server.stop() }
    let reply = try server.post(file: UploadClientTests.corpusPath(Self.jpeg), chunked: true)
    #expect(reply.status == 413)
    #expect(reply.code == "payload_too_large")
    #expect(LiveTesting.waitUntil(seconds: 5) { Self.spoolFiles(server).isEmpty })
  }

  @Test func aSpooledBodyWhoseClientLeavesIsDeleted() throws {
    let server = try Self.server()
    defer { server.stop() }
    let client = try server.live.start(
      "POST", "/v1/attachments", headers: AttachmentServer.auth(AttachmentServer.acmeKey),
      framing: .contentLength(100_000))
    try client.send([UInt8](repeating: 0xFF, count: 30_000))
    #expect(LiveTesting.waitUntil(seconds: 5) { !Self.spoolFiles(server).isEmpty })
    client.cancel()
    #expect(LiveTesting.waitUntil(seconds: 5) { Self.spoolFiles(server).isEmpty })
    #expect(server.app.uploads.engine.streamingBodies == 0)
  }

  @Test func anIdempotentSpooledUploadIsReplayed() throws {
    let server = try Self.server()
    defer { server.stop() }
    let path = UploadClientTests.corpusPath(Self.png)
    let first = try server.post(file: path, headers: ["Idempotency-Key": "spool-1"])
    let second = try server.post(file: path, headers: ["Idempotency-Key": "spool-1"])
    #expect(first.status == 201 && second.status == 201)
    #expect(first.body == second.body)
    #expect(second["idempotent-replayed"] == "true")
    let other = try server.post(
      file: UploadClientTests.corpusPath(Self.jpeg), headers: ["Idempotency-Key": "spool-1"])
    #expect(other.status == 422)
  }
}
