import Foundation
import HTTP
import Server
import Testing

@testable import App

@Suite struct ErrorTableTests {
  struct LibraryError: Error, CustomStringConvertible {
    var description: String { "tjDecompress2(): secret/path/IMG_0001.HEIC is broken" }
  }

  @Test(
    arguments: [
      (AppError.notFound, 404, "not_found", nil, nil),
      (AppError.methodNotAllowed(allow: ["GET", "HEAD"]), 405, "method_not_allowed", "GET, HEAD", nil),
      (AppError.notReady(reason: "EROFS"), 503, "not_ready", nil, "5"),
      (AppError.draining, 503, "draining", nil, "5"),
    ] as [(AppError, Int, String, String?, String?)])
  func appErrorsMapToTheirStatusCodeAndHeaders(
    error: AppError, status: Int, code: String, allow: String?, retryAfter: String?
  ) {
    let entry = ErrorTable.publicError(for: error)
    #expect(entry.status == status)
    #expect(entry.code == code)
    #expect(entry.headers.first(name: "Allow") == allow)
    #expect(entry.headers.first(name: "Retry-After") == retryAfter)
  }

  @Test func unknownErrorsAreInternalAndTheirTextStaysInTheLog() throws {
    let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("attachd-\(UUID()).log").path
    let log = EventLog(sink: try LogSink(appendingTo: logPath))
    let response = ErrorTable.response(for: LibraryError(), requestID: "req-1", log: log)
    #expect(response.status == 500)
    guard case .bytes(let body) = response.body else {
      Issue.record("no body")
      return
    }
    let text = String(decoding: body, as: UTF8.self)
    #expect(!text.contains("tjDecompress2"))
    #expect(!text.contains("IMG_0001"))
    let logged = try String(contentsOfFile: logPath, encoding: .utf8)
    #expect(logged.contains("tjDecompress2"))
    #expect(logged.contains(#""request_id":"req-1""#))
    #expect(logged.contains(#""code":"internal""#))
  }

  @Test func problemBodiesAreProblemJSONWithAStableCode() throws {
    let response = ErrorTable.response(for: AppError.notFound, requestID: "abc\"1", log: nil)
    #expect(response.headers.first(name: "Content-Type") == "application/problem+json")
    guard case .bytes(let body) = response.body else {
      Issue.record("no body")
      return
    }
    let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    #expect(object["status"] as? Int == 404)
    #expect(object["code"] as? String == "not_found")
    #expect(object["title"] as? String == "Not found")
    #expect(object["request_id"] as? String == "abc\"1")
  }
}
