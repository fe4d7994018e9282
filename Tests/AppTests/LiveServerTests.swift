import AttachdTesting
import Foundation
import Testing

@testable import App

/// The real App handler on the real server, on 127.0.0.1, spoken to by the live test client.
@Suite(.serialized, .timeLimit(.minutes(3))) struct LiveServerTests {
  @Test func healthReadinessErrorsRequestIDsAndTheAccessLogWorkEndToEnd() throws {
    let dir = try LiveTesting.temporaryDirectory()
    var config = Application.Configuration()
    config.server.port = 0
    config.server.eventLoops = 1
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
    let client = TestClient(.live(port: server.localPort))

    let health = try client.execute("GET", "/healthz", headers: ["X-Request-Id": "live-test-1"])
    #expect(health.status == 200)
    #expect(health["x-request-id"] == "live-test-1")
    #expect(health.json?["status"] as? String == "ok")

    let ready = try client.execute("GET", "/readyz")
    #expect(ready.status == 200)
    #expect(ready["x-request-id"]?.isEmpty == false)

    let head = try client.execute("HEAD", "/healthz")
    #expect(head.status == 200)
    #expect(head.body.isEmpty)

    let missing = try client.execute("GET", "/v1/nothing?name=IMG_0001.HEIC")
    #expect(missing.status == 404)
    #expect(missing["content-type"] == "application/problem+json")
    #expect(missing.json?["code"] as? String == "not_found")

    let wrongMethod = try client.execute("DELETE", "/readyz")
    #expect(wrongMethod.status == 405)
    #expect(wrongMethod["allow"] == "GET, HEAD")
    #expect(wrongMethod["content-type"] == "application/problem+json")
    #expect(wrongMethod.json?["code"] as? String == "method_not_allowed")

    // The access-log hook runs after the response is flushed: wait for all five lines.
    #expect(LiveTesting.waitUntil(seconds: 5) { ((try? LiveTesting.jsonLines(accessPath)) ?? []).count >= 5 })
    let lines = try LiveTesting.jsonLines(accessPath)
    #expect(lines.count == 5)
    #expect(lines.map { $0["status"] as? Int } == [200, 200, 200, 404, 405])
    #expect(
      lines.map { $0["path"] as? String } == ["/healthz", "/readyz", "/healthz", "/v1/nothing", "/readyz"])
    #expect(lines.map { $0["method"] as? String } == ["GET", "GET", "HEAD", "GET", "DELETE"])
    #expect(lines[0]["request_id"] as? String == "live-test-1")
    #expect(lines[1]["request_id"] as? String == ready["x-request-id"])
    for line in lines {
      #expect((line["remote"] as? String)?.hasPrefix("127.0.0.1:") == true)
      #expect(line["duration_ms"] is Double || line["duration_ms"] is Int)
      #expect(line["bytes_in"] as? Int == 0)
    }
    #expect(lines[0]["bytes_out"] as? Int == Int(health["content-length"] ?? ""))
    let raw = try String(contentsOfFile: accessPath, encoding: .utf8)
    #expect(!raw.contains("IMG_0001"))

    server.shutdown()
    #expect(stopped.wait(timeout: .now() + 15) == .success)
  }

  @Test func readyzTurns503WhileTheServerDrains() throws {
    let dir = try LiveTesting.temporaryDirectory()
    var config = Application.Configuration()
    config.server.port = 0
    config.server.eventLoops = 1
    config.storage.dataDirectory = dir
    let app = try Application(
      configuration: config, accessLog: AccessLog(sink: .off), eventLog: EventLog(sink: .off))
    let server = try app.makeServer(handleSignals: false)
    #expect(app.readiness.check() == nil)
    let stopped = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      try? server.run()
      stopped.signal()
    }
    #expect(try TestClient(.live(port: server.localPort)).execute("GET", "/readyz").status == 200)
    server.shutdown()
    #expect(LiveTesting.waitUntil(seconds: 5) { server.isDraining })
    #expect(app.readiness.check() == .draining)
    #expect(stopped.wait(timeout: .now() + 15) == .success)
  }
}
