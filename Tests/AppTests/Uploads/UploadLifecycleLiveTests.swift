import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// The App end of the body contract, live: a credential-less request announcing a body is
/// refused before a byte is read, a trickling body is cut by the minimum rate (a resumable
/// one keeps what came), and a client that leaves while its image is in the pipeline stops the
/// work: nothing is stored, and a resumable upload's completion can be asked for again.
@Suite(
  .serialized, .timeLimit(.minutes(3)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct UploadLifecycleLiveTests {
  typealias Interop = ResumableInteropTests
  /// 200 MP: seconds in the pipeline, long enough to leave in the middle of.
  static let slowImage = "heic-samsung-200mp-irot.heic"

  /// `attachd_rejections_total{code="cancelled"}` now.
  static func cancelledCount(_ server: AttachmentServer) throws -> Int {
    let metrics = try server.client.execute("GET", "/metrics")
    let text = String(decoding: metrics.body, as: UTF8.self)
    let line = text.split(separator: "\n").first {
      $0.hasPrefix("attachd_rejections_total{code=\"cancelled\"}")
    }
    return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
  }

  /// `attachd_memory_budget_bytes_in_use` now: above 0 while an image is in the pipeline.
  static func budgetInUse(_ server: AttachmentServer) throws -> Int {
    let metrics = try server.client.execute("GET", "/metrics")
    let text = String(decoding: metrics.body, as: UTF8.self)
    let line = text.split(separator: "\n").first { $0.hasPrefix("attachd_memory_budget_bytes_in_use ") }
    return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
  }

  static func storedCount(_ server: AttachmentServer) throws -> Int {
    try server.app.attachments.store.statistics().attachments
  }

  @Test(arguments: [nil, 8])
  func aCreationWithoutACredentialAnnouncingAHugeBodyIs401BeforeAnyByte(version: Int?) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let connection = try TestConnection.live(port: Interop.port(server))
    var fields = ["Host: x", "Content-Length: 104857600"]
    if let version { fields += ["Upload-Draft-Interop-Version: \(version)", "Upload-Complete: ?1"] }
    try connection.send(TestConnection.head("POST /v1/attachments HTTP/1.1", fields))
    let final = try connection.readFinal()
    let interim = final.interim
    #expect(interim.isEmpty, "no 104 (and no 100) for a refused request")
    #expect(final.status == 401)
    #expect(SpooledUploadTests.spoolFiles(server).isEmpty)
  }

  @Test func aTricklingBodyIsCutBy408AndAResumableOneKeepsWhatCame() throws {
    let server = try AttachmentServer {
      $0.server.minBodyRate = 1000
      $0.server.minBodyRateWindow = 1
      $0.uploads.spoolThreshold = 1024
    }
    defer { server.stop() }
    let client = Interop.client(server, version: 6)
    // Plain, spooled (Content-Length over the threshold): 100 bytes every 200 ms is 500 B/s.
    let plain = try TestConnection.live(port: client.port)
    try plain.send(
      TestConnection.head(
        "POST /v1/attachments HTTP/1.1",
        ["Host: x", AttachmentServer.bearer(AttachmentServer.acmeKey), "Content-Length: 100000"]))
    let resumable = try TestConnection.live(port: client.port)
    try resumable.send(client.creation(length: 100_000))
    let interim = try resumable.readResponse()
    var sent = 0
    for _ in 0..<15 {
      try? plain.send([UInt8](repeating: 1, count: 100))
      if (try? resumable.send([UInt8](repeating: 2, count: 100))) != nil { sent += 100 }
      usleep(200_000)
    }
    #expect(try plain.readFinal().status == 408)
    #expect(try resumable.readFinal().status == 408)
    // Every byte the resumable upload received is kept; the plain spool is gone.
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    let offset = try ResumableRulesTests.exchange(server, client.offsetRetrieval(path))
    let kept = try #require(Int(offset["Upload-Offset"] ?? ""))
    #expect(kept > 0 && kept <= sent)
    #expect(LiveTesting.waitUntil(seconds: 5) { SpooledUploadTests.spoolFiles(server).count == 1 })
    #expect(try Self.storedCount(server) == 0)
  }

  /// A server whose pipeline has time for the slow image on a busy machine: what is tested is
  /// cancellation, not the deadline.
  static func patientServer() throws -> AttachmentServer {
    try AttachmentServer { $0.attachments.pipelineDeadline = 600 }
  }

  @Test func aClientGoneMidPipelineStopsTheWorkAndStoresNothing() throws {
    let server = try Self.patientServer()
    defer { server.stop() }
    let body = [UInt8](try Corpus.data(Self.slowImage))
    let before = try Self.cancelledCount(server)
    let connection = try TestConnection.live(port: Interop.port(server))
    try connection.send(
      TestConnection.head(
        "POST /v1/attachments HTTP/1.1",
        ["Host: x", AttachmentServer.bearer(AttachmentServer.acmeKey), "Content-Length: \(body.count)"]))
    try connection.send(body)
    // Leave once the image is in the pipeline (its memory is reserved), however busy the machine:
    // this server's worker has it (the budget is process-wide, shared with other tests).
    #expect(LiveTesting.waitUntil(seconds: 30) { server.serverCPUJobs > 0 })
    #expect(LiveTesting.waitUntil(seconds: 30) { ((try? Self.budgetInUse(server)) ?? 0) > 0 })
    connection.close()
    #expect(LiveTesting.waitUntil(seconds: 60) { ((try? Self.cancelledCount(server)) ?? 0) > before })
    #expect(try Self.storedCount(server) == 0)
  }

  @Test func aResumableCompletionWhoseClientLeavesMidPipelineCanBeAskedForAgain() throws {
    let server = try Self.patientServer()
    defer { server.stop() }
    let client = Interop.client(server, version: 8)
    let body = [UInt8](try Corpus.data(Self.slowImage))
    let before = try Self.cancelledCount(server)
    let connection = try TestConnection.live(port: client.port)
    try connection.send(client.creation(length: body.count, contentType: "image/heic"))
    let interim = try connection.readResponse()
    try connection.send(body)
    #expect(LiveTesting.waitUntil(seconds: 30) { server.serverCPUJobs > 0 })
    #expect(LiveTesting.waitUntil(seconds: 30) { ((try? Self.budgetInUse(server)) ?? 0) > 0 })
    connection.close()
    #expect(LiveTesting.waitUntil(seconds: 60) { ((try? Self.cancelledCount(server)) ?? 0) > before })
    #expect(try Self.storedCount(server) == 0)
    // Every byte is in and the upload is complete; its processing was given back, so the
    // completion asked for again runs it to the end.
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    let head = try ResumableRulesTests.exchange(server, client.offsetRetrieval(path))
    #expect(head["Upload-Complete"] == "?1" && head["Upload-Offset"] == String(body.count))
    let retry = try TestConnection.live(port: client.port, timeout: 60)
    try retry.send(client.append(path, offset: body.count, length: 0))
    let final = try retry.readFinal()
    #expect(final.status == 201)
    #expect(try Self.storedCount(server) == 1)
  }
}
