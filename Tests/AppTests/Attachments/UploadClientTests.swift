import Foundation
import ImagePipeline
import TestSupport
import Testing

@testable import App

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Uploads with the clients people use: curl (raw, multipart, 100-continue, chunked),
/// Python's http.client and Foundation's URLSession.
@Suite(
  .serialized, .timeLimit(.minutes(2)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct UploadClientTests {
  static func corpusPath(_ name: String) -> String { Corpus.directory!.appendingPathComponent(name).path }
  static let jpeg = "jpeg-orient-6.jpg"
  static let png = "png-palette-trns.png"

  /// What the pipeline makes of a corpus file with the server's settings.
  static func expected(_ name: String, _ options: Application.AttachmentOptions) throws -> [UInt8] {
    let pipeline = try Pipeline(configuration: options.pipelineConfiguration())
    return try pipeline.process([UInt8](try Corpus.data(name))).jpeg
  }

  /// The stored bytes of `id`, fetched with the acme key (in-process: what is checked is the
  /// upload, not this read).
  static func fetch(_ server: AttachmentServer, _ id: String) throws -> [UInt8] {
    let reply = try server.client.execute(
      "GET", "/v1/attachments/\(id)", headers: AttachmentServer.auth(AttachmentServer.acmeKey))
    #expect(reply.status == 200)
    return reply.body
  }

  @Test func aRawCurlUploadIsStoredAsThePipelineOutputWithLocationAndRecord() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let reply = try server.upload(file: Self.corpusPath(Self.jpeg), headers: ["Content-Type: image/heic"])
    #expect(reply.status == 201)
    let record = try #require(reply.json)
    let id = try #require(record["id"] as? String)
    #expect(reply.headers["location"] == "/v1/attachments/\(id)")
    #expect(record["content_type"] as? String == "image/jpeg")
    #expect(record["width"] as? Int == 1800 && record["height"] as? Int == 1200)
    let source = try #require(record["source"] as? [String: Any])
    #expect(source["format"] as? String == "jpeg")
    #expect(source["orientation"] as? Int == 6)
    #expect((record["signed_url"] as? String)?.hasPrefix("/v1/attachments/\(id)?exp=") == true)
    let expected = try Self.expected(Self.jpeg, server.app.configuration.attachments)
    #expect(try Self.fetch(server, id) == expected)
    #expect(record["bytes"] as? Int == expected.count)
  }

  @Test func aMultipartUploadWithSeveralFilesAnswersAListWithAnErrorObjectForTheBadPart() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let bad = server.directory + "/notes.txt"
    try Data("not an image at all".utf8).write(to: URL(fileURLWithPath: bad))
    let reply = try server.curl(
      "/v1/attachments",
      [
        "-H", AttachmentServer.bearer(AttachmentServer.acmeKey), "-F", "file=@" + Self.corpusPath(Self.jpeg),
        "-F", "file=@" + bad, "-F", "file=@" + Self.corpusPath(Self.png), "-F", "comment=ignored",
      ])
    #expect(reply.status == 201)
    let list = try #require(reply.jsonList)
    #expect(list.count == 3)
    #expect(list[1]["code"] as? String == "unsupported_format")
    #expect(list[1]["status"] as? Int == 415)
    #expect(list[1]["part"] as? Int == 1)
    let first = try #require(list[0]["id"] as? String)
    let third = try #require(list[2]["id"] as? String)
    #expect(reply.headers["location"] == "/v1/attachments/\(first)")
    #expect(try Self.fetch(server, first) == Self.expected(Self.jpeg, server.app.configuration.attachments))
    #expect(try Self.fetch(server, third) == Self.expected(Self.png, server.app.configuration.attachments))
  }

  @Test func aMultipartUploadWhosePartsAllFailAnswersTheFirstFailure() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let bad = server.directory + "/notes.txt"
    try Data("not an image".utf8).write(to: URL(fileURLWithPath: bad))
    let reply = try server.curl(
      "/v1/attachments", ["-H", AttachmentServer.bearer(AttachmentServer.acmeKey), "-F", "file=@" + bad])
    #expect(reply.status == 415)
    #expect(reply.headers["content-type"] == "application/problem+json")
    #expect(reply.code == "unsupported_format")
  }

  @Test func expectContinueUploadsAndAMissingKeyIsRefusedBeforeTheBodyIsSent() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let file = Self.corpusPath("jpeg-iphone6-gps.jpg")
    let ok = try server.upload(file: file, headers: ["Expect: 100-continue"])
    #expect(ok.status == 201)
    let refused = try server.curl(
      "/v1/attachments",
      ["--data-binary", "@" + file, "-H", "Expect: 100-continue", "--expect100-timeout", "10"])
    #expect(refused.status == 401)
    #expect(refused.code == "unauthorized")
    #expect(refused.headers["www-authenticate"] == "Bearer")
    // No 100 Continue came, so curl never sent the 2 MB body.
    let (_, written) = try LiveTesting.run(
      "/usr/bin/curl",
      [
        "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}", "--data-binary", "@" + file, "-H",
        "Expect: 100-continue", "--expect100-timeout", "10", server.base + "/v1/attachments",
      ], timeout: 20)
    #expect(String(decoding: written, as: UTF8.self) == "401 0")
  }

  @Test func aChunkedUploadIsCountedAsItArrivesAndRefusedPastTheLimit() throws {
    let server = try AttachmentServer {
      $0.attachments.maxUploadBytes = 500_000
      $0.attachments.maxVideoBytes = 500_000
    }
    defer { server.stop() }
    let ok = try server.upload(file: Self.corpusPath(Self.jpeg), headers: ["Transfer-Encoding: chunked"])
    #expect(ok.status == 201)
    let id = try #require(ok.json?["id"] as? String)
    #expect(try Self.fetch(server, id) == Self.expected(Self.jpeg, server.app.configuration.attachments))
    let big = try server.upload(
      file: Self.corpusPath("jpeg-iphone6-gps.jpg"), headers: ["Transfer-Encoding: chunked"])
    #expect(big.status == 413)
    #expect(big.code == "payload_too_large")
    let declared = try server.upload(file: Self.corpusPath("jpeg-iphone6-gps.jpg"))
    #expect(declared.status == 413)
  }

  @Test func pythonHTTPClientUploadsAndFetches() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let script = """
      import http.client, json, sys
      port, key, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
      body = open(path, 'rb').read()
      c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
      c.request('POST', '/v1/attachments', body=body, headers={'Authorization': 'Bearer ' + key, 'Content-Type': 'application/octet-stream'})
      r = c.getresponse(); record = json.loads(r.read())
      assert r.status == 201, r.status
      c.request('GET', r.getheader('Location'), headers={'Authorization': 'Bearer ' + key})
      g = c.getresponse(); data = g.read()
      assert g.status == 200 and len(data) == record['bytes']
      sys.stdout.buffer.write(data)
      """
    let port = String(server.base.split(separator: ":").last!)
    let (status, output) = try LiveTesting.run(
      "/usr/bin/env", ["python3", "-c", script, port, AttachmentServer.acmeKey, Self.corpusPath(Self.png)],
      timeout: 60)
    #expect(status == 0)
    #expect([UInt8](output) == (try Self.expected(Self.png, server.app.configuration.attachments)))
  }

  @Test func urlSessionUploadForFromStoresTheImage() async throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    var request = URLRequest(url: URL(string: server.base + "/v1/attachments")!)
    request.httpMethod = "POST"
    request.setValue("Bearer \(AttachmentServer.acmeKey)", forHTTPHeaderField: "Authorization")
    request.setValue("image/jpeg", forHTTPHeaderField: "Content-Type")
    let (data, response) = try await URLSession.shared.upload(for: request, from: try Corpus.data(Self.jpeg))
    let http = try #require(response as? HTTPURLResponse)
    #expect(http.statusCode == 201)
    let record = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let id = try #require(record["id"] as? String)
    var get = URLRequest(url: URL(string: server.base + "/v1/attachments/\(id)")!)
    get.setValue("Bearer \(AttachmentServer.acmeKey)", forHTTPHeaderField: "Authorization")
    let (image, _) = try await URLSession.shared.data(for: get)
    #expect([UInt8](image) == (try Self.expected(Self.jpeg, server.app.configuration.attachments)))
  }
}
