import AttachdTesting
import Foundation
import HTTP
import Server
import TestSupport
import Testing

@testable import App

@Suite struct ApplicationTests {
  /// The application on a data directory (a fresh one when nil); storage must open.
  func makeApp(dataDirectory: String? = nil) throws -> Application {
    var config = Application.Configuration()
    config.storage.dataDirectory = try dataDirectory ?? temporaryDirectory()
    return try Application(
      configuration: config, accessLog: AccessLog(sink: .off), eventLog: EventLog(sink: .off))
  }

  func temporaryDirectory() throws -> String {
    try ScratchSpace.directory("attachd-app")
  }

  /// The app's answer to `method target`, through the in-process client (the live tests run
  /// the same path on the real server).
  func respond(_ app: Application, _ method: String, _ target: String) throws -> TestResponse {
    let client = TestClient(.inProcess(app))
    defer { client.shutdown() }
    return try client.execute(method, target)
  }

  @Test func healthzIsAnsweredOnTheLoopAndReadyzOffTheLoop() throws {
    let app = try makeApp()
    var context = RequestContext(remoteAddress: "127.0.0.1:1")
    guard case .respond = app.head(HTTPRequestHead(method: "GET", target: "/healthz"), context: &context)
    else {
      Issue.record("/healthz was deferred")
      return
    }
    guard case .offload = app.head(HTTPRequestHead(method: "GET", target: "/readyz"), context: &context)
    else {
      Issue.record("/readyz probed the disk on the event loop")
      return
    }
  }

  @Test func everyRequestIsLabelledWithItsIdAndRouteTemplate() throws {
    let app = try makeApp()
    var sent = RequestContext(remoteAddress: "127.0.0.1:1")
    _ = app.head(
      HTTPRequestHead(
        method: "GET", target: "/v1/attachments/att_x/meta", headers: ["X-Request-Id": "abc-1"]),
      context: &sent)
    #expect(sent.requestID == "abc-1")
    #expect(sent.responseHeaders.first(name: "X-Request-Id") == "abc-1")
    #expect(sent.route == "/v1/attachments/{id}/meta")
    var fresh = RequestContext(remoteAddress: "127.0.0.1:1")
    _ = app.head(
      HTTPRequestHead(method: "GET", target: "/nope", headers: ["X-Request-Id": "bad id!"]), context: &fresh)
    #expect(fresh.requestID != "bad id!" && !fresh.requestID.isEmpty)
    #expect(fresh.responseHeaders.first(name: "X-Request-Id") == fresh.requestID)
    #expect(fresh.route == "unmatched")
  }

  @Test(arguments: [
    ("abc-DEF_1.2", true), ("", false), ("has space", false), ("ü", false),
    (String(repeating: "a", count: 128), true), (String(repeating: "a", count: 129), false),
  ])
  func requestIDsAreHonouredOnlyWhenWellFormed(id: String, ok: Bool) {
    #expect(RequestIDs.isWellFormed(id) == ok)
  }

  func json(_ response: TestResponse) throws -> [String: Any] {
    try #require(response.json)
  }

  @Test func healthzAnswers200() throws {
    let response = try respond(makeApp(), "GET", "/healthz")
    #expect(response.status == 200)
    #expect(try json(response)["status"] as? String == "ok")
  }

  @Test func readyzAnswers200WhenTheDataDirectoryIsWritable() throws {
    let dir = try temporaryDirectory()
    let response = try respond(makeApp(dataDirectory: dir), "GET", "/readyz?verbose=1")
    #expect(response.status == 200)
    // The probe file is gone again (the store's own files stay).
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir).allSatisfy { !$0.hasPrefix(".readyz") })
  }

  @Test func readyzAnswers503WhenTheDataDirectoryIsMissing() throws {
    // Storage opened, then the directory went (a volume unmounted under a running server).
    let dir = try temporaryDirectory()
    let app = try makeApp(dataDirectory: dir)
    try FileManager.default.removeItem(atPath: dir)
    let response = try respond(app, "GET", "/readyz")
    #expect(response.status == 503)
    #expect(response.headers.first(name: "Retry-After") == "5")
    #expect(try json(response)["code"] as? String == "not_ready")
  }

  @Test(.enabled(if: getuid() != 0, "root can write anywhere"))
  func readyzAnswers503WhenTheDataDirectoryIsReadOnly()
    throws
  {
    let dir = try temporaryDirectory()
    let app = try makeApp(dataDirectory: dir)
    chmod(dir, 0o500)
    defer { chmod(dir, 0o700) }
    #expect(try respond(app, "GET", "/readyz").status == 503)
  }

  @Test func readyzAnswers503WhileDraining() throws {
    let app = try makeApp()
    app.readiness.setDrainingCheck { true }
    let response = try respond(app, "GET", "/readyz")
    #expect(response.status == 503)
    #expect(response.headers.first(name: "Retry-After") == "5")
    #expect(try json(response)["code"] as? String == "draining")
  }

  @Test func unknownPathsAre404ProblemJSON() throws {
    let response = try respond(makeApp(), "GET", "/nope?x=1")
    #expect(response.status == 404)
    #expect(response.headers.first(name: "Content-Type") == "application/problem+json")
    #expect(try json(response)["code"] as? String == "not_found")
  }

  @Test func otherMethodsOnHealthzAre405WithAllow() throws {
    let response = try respond(makeApp(), "DELETE", "/healthz")
    #expect(response.status == 405)
    #expect(response.headers.first(name: "Allow") == "GET, HEAD")
    #expect(try json(response)["code"] as? String == "method_not_allowed")
  }
}
