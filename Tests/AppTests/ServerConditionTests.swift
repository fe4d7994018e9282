import AttachdTesting
import Dispatch
import Foundation
import Glibc
import HTTP
import Server
import Testing

@testable import App

/// What the server answers on its own comes from the App's error table: the rows directly,
/// and live on the real server with the Application as its handler.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ServerConditionTests {
  @Test(
    arguments: [
      (ServerCondition.malformedRequest(HTTPParserError(.invalidRequestLine)), 400, "malformed_request", nil),
      (.malformedRequest(HTTPParserError(.requestLineTooLong)), 414, "uri_too_long", nil),
      (.malformedRequest(HTTPParserError(.headerBlockTooLarge)), 431, "header_too_large", nil),
      (.malformedRequest(HTTPParserError(.unsupportedTransferCoding)), 501, "not_implemented", nil),
      (.malformedRequest(HTTPParserError(.unsupportedVersion)), 505, "http_version_not_supported", nil),
      (.requestTimeout, 408, "request_timeout", nil),
      (.overloaded, 503, "overloaded", "1"),
      (.tooManyConnections, 503, "too_many_connections", "1"),
      (.invalidResponseStatus(100), 500, "internal_error", nil),
      (.unreadableFile(path: "/nowhere", errno: ENOENT), 500, "internal_error", nil),
    ] as [(ServerCondition, Int, String, String?)])
  func serverConditionsMapToTheirStatusCodeAndHeaders(
    condition: ServerCondition, status: Int, code: String, retryAfter: String?
  ) throws {
    let response = try Self.application().response(for: condition, requestID: "req-7")
    #expect(response.status == status)
    #expect(response.headers.first(name: "Retry-After") == retryAfter)
    #expect(response.headers.first(name: "Content-Type") == "application/problem+json")
    let problem = try Self.problem(response)
    #expect(problem["code"] as? String == code)
    #expect(problem["status"] as? Int == status)
    #expect(problem["instance"] as? String == "req-7")
    #expect(ErrorTable.publicError(for: condition).code == code)
  }

  @Test func serverConditionCodesNeverMeanAnotherStatusElsewhereInTheTable() {
    let conditions: [ServerCondition] =
      HTTPParserError.Kind.allCases.map { .malformedRequest(HTTPParserError($0)) } + [
        .requestTimeout, .overloaded, .tooManyConnections, .invalidResponseStatus(1),
        .unreadableFile(path: "", errno: 0),
      ]
    let others: [any Error] =
      MultipartError.Kind.allCases.map { MultipartError($0) as any Error } + [
        AppError.notFound, AppError.methodNotAllowed(allow: []), AppError.draining,
        AppError.notReady(reason: ""),
      ]
    var statusByCode: [String: Int] = [:]
    for error in conditions.map({ $0 as any Error }) + others {
      let entry = ErrorTable.publicError(for: error)
      #expect(statusByCode[entry.code, default: entry.status] == entry.status, "\(entry.code)")
      statusByCode[entry.code] = entry.status
    }
    #expect(statusByCode.count >= 12)
  }

  @Test func theCannedConnectionCapAnswerHasNoInstance() throws {
    let response = try Self.application().response(for: .tooManyConnections, requestID: nil)
    let problem = try Self.problem(response)
    #expect(problem["code"] as? String == "too_many_connections")
    #expect(problem["instance"] == nil)
  }

  @Test func aConditionBeforeAnyHeadIsLabelledWithAFreshID() throws {
    var context = RequestContext(remoteAddress: "127.0.0.1:1")
    let response = try Self.application().response(
      for: .malformedRequest(HTTPParserError(.invalidRequestLine)), context: &context)
    #expect(!context.requestID.isEmpty)
    #expect(context.responseHeaders.first(name: "X-Request-Id") == context.requestID)
    #expect(context.route == "unmatched")
    #expect(try Self.problem(response)["instance"] as? String == context.requestID)
  }

  @Test func onlyServerFaultsAreLoggedWithTheirDetail() throws {
    let dir = try LiveTesting.temporaryDirectory()
    let path = dir + "/events.log"
    let app = try Self.application(eventLog: EventLog(sink: try LogSink(appendingTo: path)))
    _ = app.response(for: .overloaded, requestID: "req-1")
    _ = app.response(for: .malformedRequest(HTTPParserError(.bareLF)), requestID: "req-2")
    let fault = app.response(for: .unreadableFile(path: "/secret/file", errno: ENOENT), requestID: "req-3")
    #expect(!String(decoding: try Self.body(fault), as: UTF8.self).contains("/secret"))
    app.eventLog.flush()
    // Start-up may log too (e.g. the random signing-secret warning); count request lines only.
    let lines = try LiveTesting.jsonLines(path).filter { $0["request_id"] != nil }
    #expect(lines.count == 1)
    #expect(lines.first?["request_id"] as? String == "req-3")
    #expect((lines.first?["detail"] as? String)?.contains("/secret/file") == true)
  }

  // MARK: Live

  @Test func aMalformedRequestGetsTheTablesProblem() throws {
    try Self.withServer(try Self.liveConfiguration()) { _, port in
      let reply = try Self.exchange(port: port, "GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n")
      #expect(reply.status == 400)
      #expect(reply["content-type"] == "application/problem+json")
      #expect(reply["connection"] == "close")
      #expect(reply.json?["code"] as? String == "malformed_request")
      #expect(reply.json?["instance"] as? String == reply["x-request-id"])
    }
  }

  @Test func aHeaderBlockOverTheLimitGets431HeaderTooLarge() throws {
    var config = try Self.liveConfiguration()
    config.server.maxHeaderBytes = 512
    try Self.withServer(config) { _, port in
      let big = String(repeating: "a", count: 2000)
      let reply = try Self.exchange(port: port, "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: \(big)\r\n\r\n")
      #expect(reply.status == 431)
      #expect(reply.json?["code"] as? String == "header_too_large")
    }
  }

  @Test func aSlowHeadGets408RequestTimeout() throws {
    var config = try Self.liveConfiguration()
    config.server.headerTimeout = 0.3
    try Self.withServer(config) { _, port in
      let started = Date()
      let reply = try Self.exchange(port: port, "GET /healthz HTTP/1.1\r\nHost: a\r\n")
      #expect(reply.status == 408)
      #expect(reply.json?["code"] as? String == "request_timeout")
      #expect(Date().timeIntervalSince(started) < 3)
    }
  }

  @Test func aSaturatedWorkerPoolGets503OverloadedWithRetryAfter() throws {
    var config = try Self.liveConfiguration()
    config.server.workerThreads = 1
    config.server.workerQueueLength = 0
    try Self.withServer(config) { server, port in
      let gate = DispatchSemaphore(value: 0)
      // Hold the only worker so /readyz (answered from the pool) finds it full.
      #expect(server.pool.trySubmit { _ = gate.wait(timeout: .now() + 10) })
      defer { gate.signal() }
      let reply = try TestClient(.live(port: port)).execute("GET", "/readyz")
      #expect(reply.status == 503)
      #expect(reply["retry-after"] == "1")
      #expect(reply.json?["code"] as? String == "overloaded")
    }
  }

  @Test func aConnectionOverTheCapGets503TooManyConnectionsWithTodaysDate() throws {
    var config = try Self.liveConfiguration()
    config.server.maxConnections = 1
    try Self.withServer(config) { server, port in
      let held = try TestClient(.live(port: port)).connect()
      defer { held.close() }
      #expect(LiveTesting.waitUntil(seconds: 5) { server.connectionCount == 1 })
      // The answer is serialised at start-up; its Date must still be rewritten per refusal.
      sleep(2)
      let reply = try Self.exchange(port: port, nil)
      #expect(reply.status == 503)
      #expect(reply["retry-after"] == "1")
      #expect(reply["connection"] == "close")
      #expect(reply.json?["code"] as? String == "too_many_connections")
      #expect(reply.json?["instance"] == nil)
      let formatter = DateFormatter()
      formatter.locale = Locale(identifier: "en_US_POSIX")
      formatter.timeZone = TimeZone(identifier: "GMT")
      formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
      let date = try #require(formatter.date(from: reply["date"] ?? ""))
      #expect(abs(date.timeIntervalSinceNow) < 1.5)
    }
  }

  // MARK: Helpers

  static func application(eventLog: EventLog = EventLog(sink: .off)) throws -> Application {
    try Application(configuration: liveConfiguration(), accessLog: AccessLog(sink: .off), eventLog: eventLog)
  }

  static func body(_ response: HTTPResponse) throws -> [UInt8] {
    guard case .bytes(let bytes) = response.body else { throw CocoaError(.formatting) }
    return bytes
  }

  static func problem(_ response: HTTPResponse) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(body(response))) as? [String: Any])
  }

  /// One event loop on an ephemeral port, data in a fresh directory.
  static func liveConfiguration() throws -> Application.Configuration {
    var config = Application.Configuration()
    config.server.port = 0
    config.server.eventLoops = 1
    config.storage.dataDirectory = try LiveTesting.temporaryDirectory()
    return config
  }

  /// Runs `body` against a live server with the Application as handler, then drains it.
  static func withServer(_ config: Application.Configuration, _ body: (Server, Int) throws -> Void) throws {
    let app = try Application(
      configuration: config, accessLog: AccessLog(sink: .off), eventLog: EventLog(sink: .off))
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
    try body(server, server.localPort)
  }

  /// Sends `request` (if any) on a fresh connection to the live server on `port` and reads
  /// the answer: every answer here ends the connection.
  static func exchange(port: Int, _ request: String?) throws -> TestResponse {
    let connection = try TestClient(.live(port: port)).connect()
    if let request { try connection.send(request) }
    return try connection.readResponse()
  }
}

extension Application {
  /// `response(for:context:)` for a request the handler already labelled `requestID` (nil: a
  /// fresh context, as for the canned connection-cap answer).
  fileprivate func response(for condition: ServerCondition, requestID: String?) -> HTTPResponse {
    var context = RequestContext(remoteAddress: "127.0.0.1:1")
    if let requestID { context.requestID = requestID }
    return response(for: condition, context: &context)
  }
}
