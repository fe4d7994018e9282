import AttachdTesting
import Foundation
import HTTP
import TestSupport
import Testing

@testable import App

/// The data directory on a volume that fills up: a tmpfs of the test's own (8 MiB), filled to
/// the last block with a filler file. Every upload that needs a byte of disk answers `507`
/// `storage_full` with `Retry-After`; what was acknowledged before (a resumable upload's offset
/// and its bytes) stays, readable and intact; nothing half-written is left; stored attachments
/// are still served; `/readyz` says the volume is full. Once the filler is gone, the same
/// uploads go through on the same server, and an interrupted one completes into one record.
@Suite(
  .serialized, .timeLimit(.minutes(2)),
  .enabled(if: SmallVolume.canMount, "skipped: this process may not mount a tmpfs (needs root)"))
struct DiskFullTests {
  /// Small enough to stay in memory (the blob write is the first write to disk).
  static let small = TusServer.png(side: 32, seed: 11)
  /// Over the spool threshold below: spooled to the upload store as it arrives.
  static let large = TusServer.png(side: 200, seed: 12)

  /// A server whose data directory is a full-able volume: uploads over 64 KiB are spooled,
  /// through a 16 KiB write buffer.
  final class FullableServer {
    let volume: SmallVolume
    let server: AttachmentServer
    var data: String { volume.path }
    var port: Int { server.port }

    /// Commits every `commitBytes` (by default 8 MiB: for these bodies, at the end of each request).
    init(commitBytes: Int? = nil) throws {
      volume = try SmallVolume(megabytes: 8)
      do {
        server = try AttachmentServer { [volume] config in
          config.storage.dataDirectory = volume.path
          config.uploads.spoolThreshold = 64 << 10
          config.uploads.writeBufferBytes = 16 << 10
          if let commitBytes { config.uploads.commitBytes = commitBytes }
        }
      } catch {
        volume.unmount()
        throw error
      }
    }

    /// Stops the server, then unmounts: always, whatever the test saw.
    func stop() {
      server.stop()
      volume.unmount()
    }

    /// One request over the server's socket, with the acme key.
    func request(_ method: String, _ path: String, _ fields: [(String, String)] = [], body: [UInt8]? = nil)
      throws -> TestResponse
    {
      try server.live.execute(
        method, path,
        headers: HTTPHeaders([("Authorization", "Bearer " + AttachmentServer.acmeKey)] + fields),
        body: body.map { .bytes($0) } ?? .empty)
    }

    /// A plain upload of `bytes`, retry-safe under `key` when given.
    func upload(_ bytes: [UInt8], key: String? = nil) throws -> TestResponse {
      try request("POST", "/v1/attachments", key.map { [("Idempotency-Key", $0)] } ?? [], body: bytes)
    }

    /// The stored attachments (rows in the index).
    func attachments() throws -> Int { try server.app.attachments.store.statistics().attachments }

    /// `/readyz` over the socket.
    func readiness() throws -> TestResponse { try server.live.execute("GET", "/readyz") }

    /// Waits (at most 5 s) for `/readyz` to answer `status`.
    func expectReadiness(_ status: Int) throws -> TestResponse {
      var reply = try readiness()
      let deadline = Date().addingTimeInterval(5)
      while reply.status != status && Date() < deadline {
        usleep(100_000)
        reply = try readiness()
      }
      #expect(reply.status == status, "readyz \(reply.status) \(reply.text)")
      return reply
    }

    /// What is left in the data directory that should not be: blob temporary files, readiness
    /// probe files, and spool files other than `spools` (upload id → its committed offset) or
    /// of another size.
    func strays(spools: [String: Int] = [:]) -> [String] {
      let fileManager = FileManager.default
      var strays = ((try? fileManager.contentsOfDirectory(atPath: data + "/tmp")) ?? []).map { "tmp/" + $0 }
      strays += ((try? fileManager.contentsOfDirectory(atPath: data)) ?? []).filter {
        $0.hasPrefix(".readyz")
      }
      for name in (try? fileManager.contentsOfDirectory(atPath: data + "/uploads")) ?? [] {
        let size = (try? fileManager.attributesOfItem(atPath: data + "/uploads/" + name)[.size] as? Int) ?? -1
        if spools[name] != size { strays.append("uploads/\(name) (\(size) bytes)") }
      }
      return strays
    }
  }

  /// A 507 `storage_full` with `Retry-After`.
  static func expectFull(_ reply: TestResponse, _ what: String) {
    #expect(reply.status == 507, "\(what): \(reply.status) \(reply.text)")
    #expect(reply.head.hasPrefix("HTTP/1.1 507 Insufficient Storage\r\n"), "\(what): \(reply.head)")
    #expect(reply.code == "storage_full", "\(what)")
    #expect(reply["Retry-After"] == String(ErrorTable.storageFullRetryAfterSeconds), "\(what)")
    #expect(reply["Content-Type"] == "application/problem+json", "\(what)")
  }

  @Test func plainUploadsOnAFullVolumeAnswer507AndReadsAndReadinessSaySo() throws {
    let node = try FullableServer()
    defer { node.stop() }
    let stored = try node.upload(TusServer.png(side: 48, seed: 10))
    #expect(stored.status == 201)
    let id = try #require(stored.json?["id"] as? String)
    let image = try node.request("GET", "/v1/attachments/\(id)")
    #expect(image.status == 200)
    _ = try node.expectReadiness(200)

    try node.volume.fill()
    #expect(node.volume.freeBytes == 0)
    Self.expectFull(try node.upload(Self.small, key: "small-1"), "in-memory upload (the blob write)")
    Self.expectFull(try node.upload(Self.large, key: "large-1"), "spooled upload")
    #expect(try node.attachments() == 1)
    #expect(node.strays().isEmpty, "\(node.strays())")
    // Reads need no space.
    let again = try node.request("GET", "/v1/attachments/\(id)")
    #expect(again.status == 200 && again.body == image.body)
    #expect(try node.request("GET", "/v1/attachments/\(id)/meta").status == 200)
    let ready = try node.expectReadiness(503)
    #expect(ready.code == "storage_full")
    #expect(ready.json?["title"] as? String == "The data directory's volume is full")
    let metrics = try node.server.live.execute("GET", "/metrics").text
    #expect(metrics.contains("attachd_data_volume_free_bytes 0\n"))
    #expect(metrics.contains(#"attachd_rejections_total{code="storage_full"} 2"#))

    node.volume.free()
    _ = try node.expectReadiness(200)
    // The same retry-safe requests: the 507s were not recorded as their answers.
    let small = try node.upload(Self.small, key: "small-1")
    #expect(small.status == 201, "\(small.status) \(small.text)")
    let large = try node.upload(Self.large, key: "large-1")
    #expect(large.status == 201, "\(large.status) \(large.text)")
    #expect(try node.attachments() == 3)
    #expect(node.strays().isEmpty, "\(node.strays())")
  }

  @Test func aRenditionFirstAskedForOnAFullVolumeIsServedWithoutBeingStored() throws {
    let node = try FullableServer()
    defer { node.stop() }
    // 1000 × 800: OpenAI's rendition (short side 768) differs from the stored image.
    let pixels = (0..<(1000 * 800)).map { UInt8(truncatingIfNeeded: ($0 % 1000) / 4 + ($0 / 1000) / 8) }
    let stored = try node.upload(PNGWriter.png(width: 1000, height: 800, colourType: 0, pixels: pixels))
    #expect(stored.status == 201, "\(stored.status) \(stored.text)")
    let id = try #require(stored.json?["id"] as? String)

    try node.volume.fill()
    let made = try node.request("GET", "/v1/attachments/\(id)?profile=openai")
    #expect(made.status == 200, "\(made.status) \(made.text)")
    #expect(made["Content-Type"] == "image/jpeg" && made.body.starts(with: [0xFF, 0xD8]))
    let meta = try node.request("GET", "/v1/attachments/\(id)/meta?profile=openai")
    #expect(meta.status == 200 && meta.json?["width"] as? Int == 960 && meta.json?["height"] as? Int == 768)
    let partial = try node.request("GET", "/v1/attachments/\(id)?profile=openai", [("Range", "bytes=0-9")])
    #expect(partial.status == 206 && partial.body == Array(made.body.prefix(10)))
    #expect(node.strays().isEmpty, "\(node.strays())")
    // Nothing was stored: the stored image is the only blob.
    #expect(try node.server.app.attachments.store.statistics().blobs == 1)

    node.volume.free()
    // Made again, stored this time: the same bytes under the same validator.
    let again = try node.request("GET", "/v1/attachments/\(id)?profile=openai")
    #expect(again.status == 200 && again.body == made.body && again["ETag"] == made["ETag"])
    #expect(try node.server.app.attachments.store.statistics().blobs == 2)
  }

  @Test func anIETFAppendOnAFullVolumeKeepsTheCommittedOffsetAndResumesOnceFreed() throws {
    let node = try FullableServer()
    defer { node.stop() }
    let body = Self.large
    let half = body.count / 2
    let client = ResumableClient(version: 8, key: AttachmentServer.acmeKey, port: node.port)
    let creation = try TestConnection.live(port: node.port)
    try creation.send(client.creation(length: half, complete: false, contentType: "image/png"))
    try creation.send(Array(body[..<half]))
    let created = try creation.readFinal()
    creation.close()
    #expect(created.status == 201)
    let path = ResumableClient.path(of: try #require(created["Location"]))
    let id = String(path.split(separator: "/").last!)

    try node.volume.fill()
    let append = try TestConnection.live(port: node.port)
    try append.send(client.append(path, offset: half, length: body.count - half))
    // The answer may come before the whole body is taken.
    _ = append.sendSome(Array(body[half...]))
    Self.expectFull(try append.readFinal(), "interop 8 append")
    append.close()
    // The acknowledged offset and its bytes stay; nothing past it is kept.
    let offset = try Self.offset(client, path, port: node.port)
    #expect(offset == half)
    let spool = try Data(contentsOf: URL(fileURLWithPath: node.data + "/uploads/" + id))
    #expect([UInt8](spool) == Array(body[..<half]))
    #expect(node.strays(spools: [id: half]).isEmpty, "\(node.strays(spools: [id: half]))")
    #expect(try node.expectReadiness(503).code == "storage_full")

    node.volume.free()
    let resume = try TestConnection.live(port: node.port)
    try resume.send(client.append(path, offset: half, length: body.count - half))
    try resume.send(Array(body[half...]))
    let completed = try resume.readFinal()
    resume.close()
    #expect(completed.status == 201, "\(completed.status) \(completed.text)")
    let record = try #require(completed.json)
    #expect(try node.attachments() == 1)
    #expect(node.strays().isEmpty, "\(node.strays())")
    let plain = try node.upload(body)
    let plainRecord = try #require(plain.json)
    #expect(TusServer.content(record) == TusServer.content(plainRecord))
    _ = try node.expectReadiness(200)
  }

  @Test func aTusPatchOnAFullVolumeKeepsTheOffsetAndResumesOnceFreed() throws {
    let node = try FullableServer()
    defer { node.stop() }
    let body = Self.large
    let half = body.count / 2
    let tus = [TusServer.tus, TusServer.stream]
    let created = try node.request(
      "POST", "/v1/tus",
      [("Host", "127.0.0.1:\(node.port)"), TusServer.tus, ("Upload-Length", "\(body.count)")])
    #expect(created.status == 201)
    let location = try #require(created["Location"])
    let path = try #require(URL(string: location)?.path)
    let id = String(path.split(separator: "/").last!)
    let first = try node.request("PATCH", path, tus + [("Upload-Offset", "0")], body: Array(body[..<half]))
    #expect(first.status == 204 && first["Upload-Offset"] == "\(half)")

    try node.volume.fill()
    let refused = try node.request(
      "PATCH", path, tus + [("Upload-Offset", "\(half)")], body: Array(body[half...]))
    Self.expectFull(refused, "tus PATCH")
    #expect(refused["Tus-Resumable"] == "1.0.0")
    let head = try node.request("HEAD", path, [TusServer.tus])
    #expect(head.status == 200 && head["Upload-Offset"] == "\(half)")
    let spool = try Data(contentsOf: URL(fileURLWithPath: node.data + "/uploads/" + id))
    #expect([UInt8](spool) == Array(body[..<half]))
    #expect(node.strays(spools: [id: half]).isEmpty, "\(node.strays(spools: [id: half]))")

    node.volume.free()
    let rest = try node.request(
      "PATCH", path, tus + [("Upload-Offset", "\(half)")], body: Array(body[half...]))
    #expect(rest.status == 204 && rest["Upload-Offset"] == "\(body.count)", "\(rest.status) \(rest.text)")
    #expect(rest["Content-Location"]?.hasPrefix("/v1/attachments/att_") == true)
    #expect(try node.attachments() == 1)
    #expect(node.strays().isEmpty, "\(node.strays())")
  }

  @Test func aBodyThatFillsTheVolumeHalfWayKeepsWhatWasCommittedAndSaysWhere() throws {
    let node = try FullableServer(commitBytes: 16 << 10)
    defer { node.stop() }
    let body = Self.large
    try node.volume.fill(leaving: 96 << 10)
    // Interop 6 puts Upload-Offset on every answer.
    let client = ResumableClient(version: 6, key: AttachmentServer.acmeKey, port: node.port)
    let creation = try TestConnection.live(port: node.port)
    try creation.send(client.creation(length: body.count, contentType: "image/png"))
    let interim = try creation.readResponse()
    #expect(interim.status == 104)
    _ = creation.sendSome(body)
    let refused = try creation.readFinal()
    creation.close()
    Self.expectFull(refused, "interop 6 creation")
    let told = try #require(Int(refused["Upload-Offset"] ?? ""))
    // 96 KiB of room: some 16 KiB commits went through before a write found no space (65536
    // bytes here); the index's own writes take the rest.
    #expect(told > 0 && told < body.count, "\(told) of \(body.count) bytes committed")
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    let id = String(path.split(separator: "/").last!)
    // What the refusal told is what a HEAD reports and what the spool holds: the client's bytes.
    #expect(try Self.offset(client, path, port: node.port) == told)
    let spool = try Data(contentsOf: URL(fileURLWithPath: node.data + "/uploads/" + id))
    #expect([UInt8](spool) == Array(body[..<told]))
    #expect(node.strays(spools: [id: told]).isEmpty, "\(node.strays(spools: [id: told]))")

    node.volume.free()
    let resume = try TestConnection.live(port: node.port)
    try resume.send(client.append(path, offset: told, length: body.count - told))
    try resume.send(Array(body[told...]))
    let completed = try resume.readFinal()
    resume.close()
    #expect(completed.status == 201, "\(completed.status) \(completed.text)")
    #expect(try node.attachments() == 1)
    #expect(node.strays().isEmpty, "\(node.strays())")
  }

  /// The upload's offset as a HEAD reports it.
  static func offset(_ client: ResumableClient, _ path: String, port: Int) throws -> Int {
    let connection = try TestConnection.live(port: port)
    defer { connection.close() }
    try connection.send(client.offsetRetrieval(path))
    let head = try connection.readResponse(forHead: true)
    #expect(head.status == 204 || head.status == 200, "HEAD \(head.status)")
    return try #require(Int(head["Upload-Offset"] ?? ""))
  }
}
