import Foundation
import HTTP
import Server
import Synchronization
import Testing

@testable import App

@Suite struct ApplicationTests {
  func makeApp(dataDirectory: String) -> Application {
    var config = Application.Configuration()
    config.storage.dataDirectory = dataDirectory
    return Application(
      configuration: config, accessLog: AccessLog(sink: .off), eventLog: EventLog(sink: .off))
  }

  func temporaryDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("attachd-app-\(UUID())").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  /// Collects what a deferred response sends; `offload` runs the work at once, as a free
  /// worker would. (The live tests run the same path on the real server.)
  final class CollectingResponder: Responder {
    let responses = Mutex<[HTTPResponse]>([])
    func respond(_ response: HTTPResponse) { responses.withLock { $0.append(response) } }
    func sendInterim(status: Int, headers: HTTPHeaders) {}
    func offload(_ work: @escaping @Sendable () -> HTTPResponse) -> Bool {
      respond(work())
      return true
    }
  }

  func respond(_ app: Application, _ method: String, _ target: String) throws -> HTTPResponse {
    let decision = app.head(
      HTTPRequestHead(method: method, target: target),
      context: RequestContext(requestID: "req-42", remoteAddress: "127.0.0.1:1"))
    switch decision {
    case .respond(let response):
      return response
    case .readBody(let consumer):
      let responder = CollectingResponder()
      consumer.end(trailers: [:], responder: responder)
      let responses = responder.responses.withLock { $0 }
      #expect(responses.count == 1)
      return try #require(responses.first)
    }
  }

  @Test func healthzIsAnsweredOnTheLoopAndReadyzOffTheLoop() {
    let app = makeApp(dataDirectory: "/tmp")
    let context = RequestContext(requestID: "r", remoteAddress: "127.0.0.1:1")
    guard case .respond = app.head(HTTPRequestHead(method: "GET", target: "/healthz"), context: context)
    else {
      Issue.record("/healthz was deferred")
      return
    }
    guard case .readBody = app.head(HTTPRequestHead(method: "GET", target: "/readyz"), context: context)
    else {
      Issue.record("/readyz probed the disk on the event loop")
      return
    }
  }

  func json(_ response: HTTPResponse) throws -> [String: Any] {
    guard case .bytes(let body) = response.body else { throw CancellationError() }
    return try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
  }

  @Test func healthzAnswers200() throws {
    let response = try respond(makeApp(dataDirectory: "/nonexistent"), "GET", "/healthz")
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
    let response = try respond(makeApp(dataDirectory: "/nonexistent/attachd"), "GET", "/readyz")
    #expect(response.status == 503)
    #expect(response.headers.first(name: "Retry-After") == "5")
    #expect(try json(response)["code"] as? String == "not_ready")
  }

  @Test(.enabled(if: getuid() != 0, "root can write anywhere"))
  func readyzAnswers503WhenTheDataDirectoryIsReadOnly()
    throws
  {
    let dir = try temporaryDirectory()
    chmod(dir, 0o500)
    defer { chmod(dir, 0o700) }
    #expect(try respond(makeApp(dataDirectory: dir), "GET", "/readyz").status == 503)
  }

  @Test func readyzAnswers503WhileDraining() throws {
    let app = makeApp(dataDirectory: try temporaryDirectory())
    app.readiness.setDrainingCheck { true }
    let response = try respond(app, "GET", "/readyz")
    #expect(response.status == 503)
    #expect(response.headers.first(name: "Retry-After") == "5")
    #expect(try json(response)["code"] as? String == "draining")
  }

  @Test func unknownPathsAre404ProblemJSON() throws {
    let response = try respond(makeApp(dataDirectory: "/tmp"), "GET", "/nope?x=1")
    #expect(response.status == 404)
    #expect(response.headers.first(name: "Content-Type") == "application/problem+json")
    #expect(try json(response)["code"] as? String == "not_found")
  }

  @Test func otherMethodsOnHealthzAre405WithAllow() throws {
    let response = try respond(makeApp(dataDirectory: "/tmp"), "DELETE", "/healthz")
    #expect(response.status == 405)
    #expect(response.headers.first(name: "Allow") == "GET, HEAD")
    #expect(try json(response)["code"] as? String == "method_not_allowed")
  }
}
