import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App
@testable import Storage
@testable import Uploads

/// The rules around a resumable upload (connections cut on the live server, the rest in-process): each version's error shapes, who may touch an
/// upload, takeover by a newer request, progress, expiry, limits, idempotency and repeats.
@Suite(
  .serialized, .timeLimit(.minutes(3)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct ResumableRulesTests {
  typealias Interop = ResumableInteropTests
  static let jpeg = ResumableInteropTests.jpeg

  /// Creates an upload (careful creation: no bytes) on `server` and returns its path.
  static func create(_ client: ResumableClient, on server: AttachmentServer, extra: [String] = []) throws
    -> String
  {
    let created = try exchange(server, client.creation(length: 0, complete: false, extra: extra))
    #expect(created.status == 201)
    return ResumableClient.path(of: try #require(created["Location"]))
  }

  /// Sends `head` and `body` through `server`'s in-process client; the final answer.
  static func exchange(_ server: AttachmentServer, _ head: String, _ body: [UInt8] = []) throws
    -> TestResponse
  {
    try server.client.execute(raw: head, body: body)
  }

  @Test(arguments: ResumableInteropTests.versions)
  func anAppendAtTheWrongOffsetIs409WithTheRightOffsetAndTheVersionsProblemType(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Interop.client(server, version: version)
    let path = try Self.create(client, on: server)
    let bytes = [UInt8](repeating: 7, count: 1000)
    let first = try Self.exchange(
      server, client.append(path, offset: 0, length: 1000, complete: false), bytes)
    #expect(first.status == (version >= 7 ? 204 : 201))
    let wrong = try Self.exchange(
      server, client.append(path, offset: 400, length: 10, complete: false),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    #expect(wrong.status == 409)
    #expect(wrong["Upload-Offset"] == "1000")
    let json = try #require(wrong.json)
    if version >= 6 {
      #expect(
        json["type"] as? String == "https://iana.org/assignments/http-problem-types#mismatching-upload-offset"
      )
      #expect(json["expected-offset"] as? Int == 1000)
      #expect(json["provided-offset"] as? Int == 400)
    } else {
      #expect(json["type"] as? String == "about:blank")
    }
    #expect(json["code"] as? String == "upload_offset_mismatch")
  }

  /// The corpus JPEG sent at `version`, cut after 1000 bytes and resumed to its 201.
  static func completedUpload(_ server: AttachmentServer, version: Int) throws -> (
    client: ResumableClient, body: [UInt8], resumed: ResumableClient.Resumed
  ) {
    let client = Interop.client(server, version: version)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let resumed = try client.interruptedUpload(body, cut: 1000)
    #expect(resumed.final.status == 201)
    return (client, body, resumed)
  }

  @Test(arguments: ResumableInteropTests.versions)
  func appendingToACompletedUploadIsRefusedAndChangesNothing(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let (client, body, resumed) = try Self.completedUpload(server, version: version)
    let more = try Self.exchange(
      server, client.append(resumed.path, offset: body.count, length: 3, complete: false), [1, 2, 3])
    #expect(more.status == 400)
    #expect(more.json?["code"] as? String == "upload_completed")
    #expect(
      more.json?["type"] as? String
        == (version >= 6 ? "https://iana.org/assignments/http-problem-types#completed-upload" : "about:blank")
    )
    // Its HEAD names what it became (a client that lost the final answer learns it there).
    let head = try Self.exchange(server, client.offsetRetrieval(resumed.path))
    let id = try #require(resumed.final.json?["id"] as? String)
    #expect(head.status == 204 && head["Content-Location"] == "/v1/attachments/\(id)", "\(head.head)")
    // A completing append with no body at the final offset asks for the answer again, except
    // at interop 6 and 7, whose drafts refuse every append to a completed upload.
    let again = try Self.exchange(server, client.append(resumed.path, offset: body.count, length: 0))
    if version == 6 || version == 7 {
      #expect(again.status == 400)
      #expect(again.json?["code"] as? String == "upload_completed")
      #expect(again.json?["type"] as? String == ResumableVersion.completedUploadType)
    } else {
      #expect(again.status == 201)
      #expect(again.body == resumed.final.body)
    }
  }

  /// A node died while it processed an upload it had completed (after storing the attachment,
  /// before recording the answer): every byte is in, no answer is. The client's repeated
  /// completion — an empty completing append at the final offset — processes it at every
  /// version (interop 6 and 7 too, whose 400 is for an upload that has its answer), and the
  /// attachment stored before is the answer, not a twin. (Found by ChaosTests.)
  @Test(arguments: ResumableInteropTests.versions)
  func anUploadCompleteWithoutAnAnswerIsProcessedByItsRepeatedCompletion(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let (client, body, resumed) = try Self.completedUpload(server, version: version)
    let id = try #require(resumed.final.json?["id"] as? String)
    let index = try #require(server.app.attachments.store.index as? SQLiteIndex)
    try index.write {
      try $0.query(
        "UPDATE uploads SET state = 'completed', result_attachment = NULL, result_status = NULL,"
          + " result_headers = NULL, result_body = NULL")
    }
    // The spool file a recorded answer removes is still there when the node died first.
    let upload = try #require(resumed.path.split(separator: "/").last)
    try Data(body).write(to: URL(fileURLWithPath: server.directory + "/data/uploads/\(upload)"))
    let again = try Self.exchange(server, client.append(resumed.path, offset: body.count, length: 0))
    #expect(again.status == 201, "\(again.status) \(again.text)")
    #expect(again.json?["id"] as? String == id)
    #expect(try index.statistics().attachments == 1)
  }

  @Test(arguments: ResumableInteropTests.versions)
  func inconsistentLengthsAre400WithTheProblemTypeFromVersion7(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Interop.client(server, version: version)
    // The creation says 100 bytes in all (complete, Content-Length 100) and is cut at 50.
    let connection = try TestConnection.live(port: client.port)
    try connection.send(client.creation(length: 100))
    let interim = try connection.readResponse()
    try connection.send([UInt8](repeating: 1, count: 50))
    usleep(100_000)
    connection.close()
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    // The completing append brings 60 more: 110 is not 100.
    let completing = try Self.exchange(
      server, client.append(path, offset: 50, length: 60), Array(repeating: 2, count: 60))
    #expect(completing.status == 400)
    #expect(completing.json?["code"] as? String == "upload_length_mismatch")
    #expect(
      completing.json?["type"] as? String
        == (version >= 7 ? ResumableVersion.inconsistentLengthType : "about:blank"))
    let offset = try Self.exchange(server, client.offsetRetrieval(path))
    #expect(offset["Upload-Offset"] == "50")
    if version >= 7 {
      // A creation whose Upload-Length and Content-Length disagree.
      let head = client.creation(length: 20).replacingOccurrences(
        of: "Upload-Length: 20", with: "Upload-Length: 21")
      let creation = try Self.exchange(server, head, Array(repeating: 3, count: 20))
      #expect(creation.status == 400)
      #expect(creation.json?["type"] as? String == ResumableVersion.inconsistentLengthType)
    }
  }

  @Test func appendsOfVersion6OnMustBePartialUploadsAndFrom7SayWhetherTheyComplete() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let v6 = Interop.client(server, version: 6)
    let path6 = try Self.create(v6, on: server)
    let octets = try Self.exchange(
      server,
      v6.append(path6, offset: 0, length: 1).replacingOccurrences(
        of: "application/partial-upload", with: "application/octet-stream"), [1])
    #expect(octets.status == 415)
    #expect(octets["Accept-Patch"] == "application/partial-upload")
    let v7 = Interop.client(server, version: 7)
    let path7 = try Self.create(v7, on: server)
    let silent = try Self.exchange(
      server,
      v7.append(path7, offset: 0, length: 1).replacingOccurrences(of: "Upload-Complete: ?1\r\n", with: ""),
      [1])
    #expect(silent.status == 400)
    // Before -06 an append without completeness completes the upload (here: an empty body, so
    // the pipeline refuses it: the completion was attempted).
    let v5 = Interop.client(server, version: 5)
    let path5 = try Self.create(v5, on: server)
    let implicit = try Self.exchange(
      server,
      v5.append(path5, offset: 0, length: 4).replacingOccurrences(of: "Upload-Complete: ?1\r\n", with: ""),
      [1, 2, 3, 4])
    #expect(implicit.status == 415)
    #expect(implicit["Upload-Complete"] == "?1")
  }

  @Test func offsetRetrievalAndCancellationCarryNoUploadFields() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Interop.client(server, version: 6)
    let path = try Self.create(client, on: server)
    let head = client.offsetRetrieval(path).replacingOccurrences(
      of: "\r\n\r\n", with: "\r\nUpload-Offset: 0\r\n\r\n")
    #expect(try Self.exchange(server, head).status == 400)
    let delete = client.cancellation(path).replacingOccurrences(
      of: "\r\n\r\n", with: "\r\nUpload-Complete: ?1\r\n\r\n")
    #expect(try Self.exchange(server, delete).status == 400)
  }

  @Test func aCancelledUploadIsGoneWithItsBytes() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Interop.client(server, version: 8)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let connection = try TestConnection.live(port: client.port)
    try connection.send(client.creation(length: body.count))
    let interim = try connection.readResponse()
    try connection.send(Array(body[0..<5000]))
    usleep(100_000)
    connection.close()
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    #expect(LiveTesting.waitUntil(seconds: 5) { !SpooledUploadTests.spoolFiles(server).isEmpty })
    let cancelled = try Self.exchange(server, client.cancellation(path))
    #expect(cancelled.status == 204)
    #expect(SpooledUploadTests.spoolFiles(server).isEmpty)
    #expect(try Self.exchange(server, client.offsetRetrieval(path)).status == 404)
    #expect(try Self.exchange(server, client.append(path, offset: 5000, length: 1), [1]).status == 404)
    #expect(try Self.exchange(server, client.cancellation(path)).status == 404)
  }

  @Test func anUploadAnswers404ToAnyoneButItsCreatorAnd401WithoutAKey() throws {
    let backend = try TokenBackend()
    let server = try AttachmentServer { $0.auth.tokens.keys = backend.tokenKeys }
    defer { server.stop() }
    let tokens = try backend.mint([TokenBackend.acme("alice"), TokenBackend.acme("bob")])
    let alice = ResumableClient(version: 6, key: tokens[0], port: Interop.port(server))
    let path = try Self.create(alice, on: server)
    #expect(try Self.exchange(server, alice.offsetRetrieval(path)).status == 204)
    for key in [tokens[1], AttachmentServer.acmeKey, AttachmentServer.betaKey] {
      let other = ResumableClient(version: 6, key: key, port: alice.port)
      #expect(try Self.exchange(server, other.offsetRetrieval(path)).status == 404)
      #expect(try Self.exchange(server, other.append(path, offset: 0, length: 1), [1]).status == 404)
      #expect(try Self.exchange(server, other.cancellation(path)).status == 404)
    }
    let anonymous = ResumableClient(version: 6, key: "", port: alice.port)
    let head = anonymous.offsetRetrieval(path).replacingOccurrences(
      of: "Authorization: Bearer \r\n", with: "")
    #expect(try Self.exchange(server, head).status == 401)
    // Still there for alice, untouched.
    let mine = try Self.exchange(server, alice.offsetRetrieval(path))
    #expect(mine.status == 204 && mine["Upload-Offset"] == "0")
  }

  @Test func aNewRequestTakesTheUploadOverFromOneStillSendingAndKeepsWhatArrived() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Interop.client(server, version: 6)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    // The old connection is still open (as a dead radio link looks to a server) and has sent
    // a third of the body.
    let stale = try TestConnection.live(port: client.port)
    try stale.send(client.creation(length: body.count))
    let interim = try stale.readResponse()
    let third = body.count / 3
    try stale.send(Array(body[0..<third]))
    usleep(200_000)
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    let offset = try Self.exchange(server, client.offsetRetrieval(path))
    #expect(offset["Upload-Offset"] == String(third))
    // The stale request was answered and its connection ended.
    let superseded = try stale.readFinal()
    #expect(superseded.status == 409)
    #expect(superseded.json?["code"] as? String == "upload_superseded")
    #expect(stale.isClosedByPeer())
    let final = try Self.exchange(
      server, client.append(path, offset: third, length: body.count - third), Array(body[third...]))
    #expect(final.status == 201)
    #expect(Interop.facts(final.json) == (try Interop.plainFacts(server, Self.jpeg)))
  }

  @Test func aSlowBodyGetsAtMostFourProgressInterimsOfAcknowledgedOffsets() throws {
    let server = try AttachmentServer { $0.uploads.commitInterval = 0.1 }
    defer { server.stop() }
    let client = Interop.client(server, version: 8)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let connection = try TestConnection.live(port: client.port)
    try connection.send(client.creation(length: body.count))
    let first = try connection.readResponse()
    #expect(first.status == 104 && first["Location"] != nil)
    // Ten slices, each after a timer commit had its chance.
    let slice = (body.count + 9) / 10
    for start in stride(from: 0, to: body.count, by: slice) {
      try connection.send(Array(body[start..<min(body.count, start + slice)]))
      usleep(250_000)
    }
    let final = try connection.readFinal()
    let progress = final.interim
    #expect(final.status == 201)
    #expect(!progress.isEmpty && progress.count <= 4, "\(progress.count) progress interims")
    let offsets = progress.compactMap { Int($0["Upload-Offset"] ?? "") }
    #expect(offsets.count == progress.count)
    #expect(offsets == offsets.sorted() && offsets.allSatisfy { $0 > 0 && $0 <= body.count })
    #expect(
      progress.allSatisfy { $0["Location"] == nil && $0["Upload-Draft-Interop-Version"] == "8" }
    )
  }

  @Test func anUploadExpiresAfterItsLifetimeAndTheSweeperDeletesItsBytes() throws {
    let server = try AttachmentServer {
      $0.uploads.resumableTTL = 1
      $0.attachments.sweepInterval = 1
    }
    defer { server.stop() }
    let client = Interop.client(server, version: 6)
    let connection = try TestConnection.live(port: client.port)
    try connection.send(client.creation(length: 10_000))
    let interim = try connection.readResponse()
    try connection.send([UInt8](repeating: 9, count: 3000))
    usleep(100_000)
    connection.close()
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    #expect(LiveTesting.waitUntil(seconds: 5) { !SpooledUploadTests.spoolFiles(server).isEmpty })
    #expect(
      LiveTesting.waitUntil(seconds: 10) {
        (try? Self.exchange(server, client.offsetRetrieval(path)).status) == 404
      })
    #expect(LiveTesting.waitUntil(seconds: 10) { SpooledUploadTests.spoolFiles(server).isEmpty })
  }

  @Test func limitsAreAdvertisedAndEnforced() throws {
    let server = try AttachmentServer {
      $0.attachments.maxUploadBytes = 500_000
      $0.attachments.maxVideoBytes = 500_000
      $0.limits.uploads.maxConcurrentUploadsPerKey = 1
    }
    defer { server.stop() }
    let client = Interop.client(server, version: 8)
    // OPTIONS tells the limits before anything is created.
    let options = try Self.exchange(
      server,
      TestConnection.head(
        "OPTIONS /v1/attachments HTTP/1.1",
        ["Host: x", AttachmentServer.bearer(AttachmentServer.acmeKey), "Upload-Draft-Interop-Version: 8"]))
    #expect(options.status == 204)
    #expect(options["Upload-Limit"]?.contains("max-size=500000") == true)
    #expect(options["Accept-Patch"] == "application/partial-upload")
    // A creation declaring more than the limit is refused before a byte, with no 104.
    let big = try TestConnection.live(port: client.port)
    try big.send(client.creation(length: 600_000))
    let refused = try big.readFinal()
    let interims = refused.interim
    #expect(interims.isEmpty)
    #expect(refused.status == 413)
    // A creation streaming holds the caller's one upload slot: a second request waits its turn.
    let holding = try TestConnection.live(port: client.port)
    try holding.send(client.creation(length: 100_000))
    let interim = try holding.readResponse()
    try holding.send([UInt8](repeating: 1, count: 1000))
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    let second = try Self.exchange(server, client.creation(length: 10), Array(repeating: 2, count: 10))
    #expect(second.status == 429)
    #expect(second["Retry-After"] != nil)
    holding.close()
    usleep(200_000)
    // An append past the declared length: rejected, and from interop 8 the upload is invalid.
    let over = try Self.exchange(
      server, client.append(path, offset: 1000, length: 100_000, complete: false),
      Array(repeating: 3, count: 100_000))
    #expect(over.status == 400)
    #expect(over.json?["code"] as? String == "upload_length_exceeded")
    #expect(try Self.exchange(server, client.offsetRetrieval(path)).status == 404)
  }

  @Test func anIdempotencyKeyKeepsItsMeaningAcrossTheResumption() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Interop.client(server, version: 6)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let connection = try TestConnection.live(port: client.port)
    try connection.send(client.creation(length: body.count, extra: ["Idempotency-Key: resume-1"]))
    let interim = try connection.readResponse()
    try connection.send(Array(body[0..<(body.count / 2)]))
    usleep(100_000)
    connection.close()
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    let offset = Int(
      try Self.exchange(server, client.offsetRetrieval(path))["Upload-Offset"]
        ?? "")!
    let final = try Self.exchange(
      server, client.append(path, offset: offset, length: body.count - offset), Array(body[offset...]))
    #expect(final.status == 201)
    // A plain retry with the key and the same bytes gets the first answer again.
    let retry = try server.post(
      file: UploadClientTests.corpusPath(Self.jpeg), headers: ["Idempotency-Key": "resume-1"])
    #expect(retry.status == 201)
    #expect(retry.body == final.body)
    #expect(retry["idempotent-replayed"] == "true")
  }

  @Test func aMultipartBodyResumedAnswersThePlainList() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let boundary = "resumable-boundary-7"
    let jpeg = [UInt8](try Corpus.data(Self.jpeg))
    let png = [UInt8](try Corpus.data("png-palette-trns.png"))
    var body: [UInt8] = []
    for (name, bytes) in [("a.jpg", jpeg), ("b.png", png)] {
      body += Array(
        "--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\(name)\"\r\nContent-Type: application/octet-stream\r\n\r\n"
          .utf8)
      body += bytes + Array("\r\n".utf8)
    }
    body += Array("--\(boundary)--\r\n".utf8)
    let client = Interop.client(server, version: 5)
    let resumed = try client.interruptedUpload(
      body, cut: body.count / 2, contentType: "multipart/form-data; boundary=\(boundary)")
    #expect(resumed.final.status == 201)
    let list = try #require(
      (try? JSONSerialization.jsonObject(with: Data(resumed.final.body))) as? [[String: Any]])
    #expect(list.count == 2)
    let options = server.app.configuration.attachments
    #expect(
      try UploadClientTests.fetch(server, list[0]["id"] as! String)
        == UploadClientTests.expected(Self.jpeg, options))
    #expect(
      try UploadClientTests.fetch(server, list[1]["id"] as! String)
        == UploadClientTests.expected("png-palette-trns.png", options))
  }
}
