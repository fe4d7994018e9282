import AttachdTesting
import Dispatch
import Foundation
import Server
import Testing

@testable import App

/// The App on the server contract, live on 127.0.0.1: reads refused before their body, one
/// access-log line and one metric per request labelled when the head was decided.
@Suite(.serialized, .timeLimit(.minutes(1))) struct RequestContractTests {
  /// Sends `request` on a fresh connection to the live server and reads one response; returns
  /// it with the seconds it took to arrive, and the connection (still open).
  static func firstResponse(_ server: AttachmentServer, _ request: [UInt8]) throws
    -> (TestResponse, Double, TestConnection)
  {
    let connection = try server.live.connect()
    let start = Date()
    try connection.send(request)
    return (try connection.readResponse(), Date().timeIntervalSince(start), connection)
  }

  @Test func anUnauthenticatedGETAnnouncingAHundredMegabyteBodyGets401AtOnce() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let head =
      "GET /v1/attachments/att_00000000000000000000000000 HTTP/1.1\r\nHost: a\r\n"
      + "Content-Length: 104857600\r\n\r\n"
    let (reply, seconds, connection) = try Self.firstResponse(
      server, Array(head.utf8) + [UInt8](repeating: 0x61, count: 65536))
    defer { connection.close() }
    #expect(reply.status == 401)
    #expect(reply.code == "unauthorized")
    #expect(seconds < 1, "the 401 took \(seconds) s")
    // The body is never read: the connection ends after the answer.
    #expect(reply["connection"] == "close")
  }

  @Test func readsWithABodyAreAnsweredWithoutReadingIt() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    for (target, auth, status) in [
      ("/v1/attachments/att_00000000000000000000000000", true, 404),
      ("/v1/attachments/att_00000000000000000000000000/meta", true, 404),
      ("/readyz", false, 200),
    ] {
      let key = auth ? AttachmentServer.bearer(AttachmentServer.acmeKey) + "\r\n" : ""
      let head = "GET \(target) HTTP/1.1\r\nHost: a\r\n\(key)Content-Length: 50000000\r\n\r\n"
      let (reply, seconds, connection) = try Self.firstResponse(server, Array(head.utf8))
      connection.close()
      #expect(reply.status == status, "\(target)")
      #expect(seconds < 2)
      #expect(reply["connection"] == "close")
    }
  }

  @Test func everyRequestGetsOneLogLineAndOneMetricLabelledAtItsHead() throws {
    let dir = try LiveTesting.temporaryDirectory()
    var config = try ServerConditionTests.liveConfiguration()
    config.storage.dataDirectory = dir
    let accessPath = dir + "/access.log"
    let app = try Application(
      configuration: config, accessLog: AccessLog(sink: try LogSink(appendingTo: accessPath)),
      eventLog: EventLog(sink: .off))
    let server = try app.makeServer(handleSignals: false)
    let stopped = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      try? server.run()
      stopped.signal()
    }
    defer {
      server.shutdown()
      #expect(stopped.wait(timeout: .now() + 15) == .success)
    }
    let client = TestClient(.live(port: server.localPort))
    let badID = try client.execute("GET", "/healthz", headers: ["X-Request-Id": "has space"])
    let fresh = try #require(badID["x-request-id"])
    #expect(fresh != "has space" && !fresh.isEmpty)
    let meta = try client.execute("GET", "/v1/attachments/att_x/meta?token=secret")
    #expect(meta.status == 401)
    let malformed = try ServerConditionTests.exchange(
      port: server.localPort, "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n")
    #expect(malformed.status == 400)
    #expect(LiveTesting.waitUntil(seconds: 5) { ((try? LiveTesting.jsonLines(accessPath)) ?? []).count >= 3 })
    let lines = try LiveTesting.jsonLines(accessPath)
    #expect(lines.count == 3)
    #expect(
      lines.map { $0["request_id"] as? String } == [
        fresh, meta["x-request-id"], malformed["x-request-id"],
      ])
    #expect(lines.map { $0["path"] as? String } == ["/healthz", "/v1/attachments/att_x/meta", "-"])
    #expect(lines.map { $0["status"] as? Int } == [200, 401, 400])
    let text = app.metrics.render()
    for sample in [
      #"attachd_http_requests_total{route="/healthz",method="GET",status="200"} 1"#,
      #"attachd_http_requests_total{route="/v1/attachments/{id}/meta",method="GET",status="401"} 1"#,
      #"attachd_http_requests_total{route="unmatched",method="other",status="400"} 1"#,
    ] {
      #expect(text.contains(sample), "missing \(sample)")
    }
  }
}
