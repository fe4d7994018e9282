import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// The header sets clients of every interop version (3–8) send, replayed byte for byte against
/// attachd: a creation with the whole body, one cut mid-body then resumed with HEAD and PATCH,
/// each ending in the record a plain upload of the same bytes gets. Raw sockets here; curl and
/// Python's h11 in `ResumableClientToolTests`.
@Suite(
  .serialized, .timeLimit(.minutes(3)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct ResumableInteropTests {
  static let versions = [3, 4, 5, 6, 7, 8]
  static let jpeg = "jpeg-orient-6.jpg"

  static func port(_ server: AttachmentServer) -> Int { Int(server.base.split(separator: ":").last!)! }

  static func client(_ server: AttachmentServer, version: Int, key: String = AttachmentServer.acmeKey)
    -> ResumableClient
  {
    ResumableClient(version: version, key: key, port: port(server))
  }

  /// The record fields a plain upload of the same bytes must match (not the id or the times).
  static func facts(_ json: [String: Any]?) -> [String] { SpooledUploadTests.facts(json ?? [:]) }

  /// What a plain upload of `bytes` answers on `server`.
  static func plainFacts(_ server: AttachmentServer, _ name: String) throws -> [String] {
    let reply = try server.post(file: UploadClientTests.corpusPath(name))
    #expect(reply.status == 201)
    return facts(reply.json)
  }

  @Test(arguments: versions)
  func aCreationWithTheWholeBodyAnswersThe104FirstThenWhatAPlainUploadAnswers(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Self.client(server, version: version)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let connection = try TestConnection.live(port: Self.port(server))
    try connection.send(client.creation(length: body.count))
    // Sent before a byte of the body: read it before sending any.
    let interim = try connection.readResponse()
    #expect(interim.status == 104)
    #expect(interim["Upload-Draft-Interop-Version"] == String(version))
    let location = try #require(interim["Location"])
    #expect(location.hasPrefix("http://127.0.0.1:\(Self.port(server))/v1/uploads/upl_"))
    if version >= 6 {
      let limit = try #require(interim["Upload-Limit"])
      let lifetimeKey = version == 6 ? "expires=" : "max-age="
      #expect(limit.contains("max-size=\(512 << 20)") && limit.contains(lifetimeKey), "\(limit)")
    } else {
      #expect(interim["Upload-Limit"] == nil)
    }
    try connection.send(body)
    let final = try connection.readFinal()
    let progress = final.interim
    #expect(progress.allSatisfy { $0.status == 104 && $0["Location"] == nil })
    #expect(final.status == 201)
    #expect(final["Location"]?.hasPrefix("/v1/attachments/att_") == true)
    #expect(final["Content-Type"] == "application/json")
    let field = version == 3 ? "Upload-Incomplete" : "Upload-Complete"
    #expect(final[field] == (version == 3 ? "?0" : "?1"))
    if version <= 6 {
      #expect(final["Upload-Offset"] == String(body.count))
    } else {
      #expect(final["Upload-Offset"] == nil)
    }
    #expect(Self.facts(final.json) == (try Self.plainFacts(server, Self.jpeg)))
  }

  @Test(arguments: versions)
  func aCreationCutMidBodyIsResumedWithHeadAndPatchIntoThePlainRecord(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Self.client(server, version: version)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let cut = body.count * 2 / 5
    let resumed = try client.interruptedUpload(body, cut: cut)
    #expect(resumed.interim.status == 104)
    // Every byte that arrived before the drop is kept, and no more is claimed.
    let offsetAnswer = resumed.offset
    #expect(offsetAnswer.status == 204)
    #expect(offsetAnswer["Upload-Offset"] == String(cut))
    #expect(offsetAnswer["Cache-Control"] == "no-store")
    #expect(offsetAnswer["Upload-Draft-Interop-Version"] == String(version))
    if version == 3 {
      #expect(offsetAnswer["Upload-Incomplete"] == "?1")
      #expect(offsetAnswer["Upload-Complete"] == nil)
    } else {
      #expect(offsetAnswer["Upload-Complete"] == "?0")
      #expect(offsetAnswer["Upload-Incomplete"] == nil)
    }
    #expect(offsetAnswer["Upload-Length"] == (version >= 6 ? String(body.count) : nil))
    #expect((offsetAnswer["Upload-Limit"] != nil) == (version >= 6))
    let final = resumed.final
    #expect(final.status == 201)
    #expect(
      final[version == 3 ? "Upload-Incomplete" : "Upload-Complete"] == (version == 3 ? "?0" : "?1"))
    #expect(final["Upload-Offset"] == (version <= 6 ? String(body.count) : nil))
    #expect(Self.facts(final.json) == (try Self.plainFacts(server, Self.jpeg)))
    // The record's bytes are the plain upload's too.
    let id = try #require(final.json?["id"] as? String)
    let expected = try UploadClientTests.expected(Self.jpeg, server.app.configuration.attachments)
    #expect(try UploadClientTests.fetch(server, id) == expected)
    // Afterwards the upload says it is complete, at its length.
    let after = try TestConnection.live(port: Self.port(server))
    try after.send(client.offsetRetrieval(resumed.path))
    let done = try after.readResponse(forHead: true)
    #expect(done.status == 204)
    #expect(done["Upload-Offset"] == String(body.count))
    #expect(
      done[version == 3 ? "Upload-Incomplete" : "Upload-Complete"] == (version == 3 ? "?0" : "?1"))
  }

  @Test(arguments: versions)
  func anUploadInSeveralPartsAcknowledgesEachAsItsVersionSays(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = Self.client(server, version: version)
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let connection = try TestConnection.live(port: Self.port(server))
    // A careful creation: no bytes, not complete; the URL comes in the 201.
    try connection.send(client.creation(length: 0, complete: false))
    let created = try connection.readFinal()
    #expect(created.status == 201)
    let location = try #require(created["Location"])
    #expect(location.hasPrefix("http://"))
    #expect(
      created[version == 3 ? "Upload-Incomplete" : "Upload-Complete"] == (version == 3 ? "?1" : "?0"))
    let path = ResumableClient.path(of: location)
    let half = body.count / 2
    try connection.send(client.append(path, offset: 0, length: half, complete: false))
    try connection.send(Array(body[0..<half]))
    let partial = try connection.readFinal()
    #expect(partial.status == (version >= 7 ? 204 : 201))
    #expect(
      partial[version == 3 ? "Upload-Incomplete" : "Upload-Complete"] == (version == 3 ? "?1" : "?0"))
    #expect(partial["Upload-Offset"] == (version <= 6 ? String(half) : nil))
    try connection.send(client.append(path, offset: half, length: body.count - half))
    try connection.send(Array(body[half...]))
    let final = try connection.readFinal()
    #expect(final.status == 201)
    #expect(Self.facts(final.json) == (try Self.plainFacts(server, Self.jpeg)))
  }

  @Test(arguments: [0, 2, 9, 99])
  func aRequestWithNoOrAnUnknownInteropVersionIsAnOrdinaryUpload(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let body = [UInt8](try Corpus.data(Self.jpeg))
    let connection = try TestConnection.live(port: Self.port(server))
    var fields = [
      "Host: x", AttachmentServer.bearer(AttachmentServer.acmeKey), "Content-Length: \(body.count)",
      "Upload-Complete: ?1",
    ]
    if version > 0 { fields.append("Upload-Draft-Interop-Version: \(version)") }
    try connection.send(TestConnection.head("POST /v1/attachments HTTP/1.1", fields))
    try connection.send(body)
    let final = try connection.readFinal()
    let interim = final.interim
    #expect(interim.isEmpty, "no 104 for an ordinary upload")
    #expect(final.status == 201)
    #expect(final["Upload-Complete"] == nil && final["Upload-Offset"] == nil)
    #expect(Self.facts(final.json) == (try Self.plainFacts(server, Self.jpeg)))
    #expect(SpooledUploadTests.spoolFiles(server).isEmpty)
  }
}
