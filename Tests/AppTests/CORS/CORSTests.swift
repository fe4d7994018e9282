import Foundation
import Glibc
import Testing

@testable import App

/// CORS on the live server: preflights answered before authentication, byte for byte; answers
/// to listed origins readable; nothing at all for any other origin.
@Suite(.serialized, .timeLimit(.minutes(2))) struct CORSTests {
  static let page = "http://127.0.0.1:5173"
  static let tenantPage = "https://chat.acme.example"

  static func server() throws -> AttachmentServer {
    try AttachmentServer { config in
      config.cors.allowedOrigins = [page]
      config.cors.tenantOrigins = ["acme": [tenantPage]]
      config.cors.maxAge = 600
    }
  }

  /// The whole answer to `request` on a fresh connection, read until the peer closes or the
  /// head and its `Content-Length` body are in; the `Date` value is replaced with `-`.
  static func exchange(port: Int, _ request: String) throws -> String {
    let fd = try ServerConditionTests.connect(port: port)
    defer { Glibc.close(fd) }
    let bytes = Array(request.utf8)
    #expect(
      bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count)
    var received = Data()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      if let reply = try? LiveTesting.parse(received),
        reply.body.count >= Int(reply.headers["content-length"] ?? "0") ?? 0
      {
        break
      }
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard n > 0 else { break }
      received.append(contentsOf: chunk[0..<n])
    }
    let text = String(decoding: received, as: UTF8.self)
    return text.split(separator: "\r\n", omittingEmptySubsequences: false).map { line in
      line.hasPrefix("Date: ") ? "Date: -" : String(line)
    }.joined(separator: "\r\n")
  }

  static func port(_ server: AttachmentServer) -> Int { Int(server.base.split(separator: ":").last!)! }

  @Test func aPreflightFromAListedOriginIsAnsweredByteForByteBeforeAuthentication() throws {
    let server = try Self.server()
    defer { server.stop() }
    let answer = try Self.exchange(
      port: Self.port(server),
      "OPTIONS /v1/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: \(Self.page)\r\n"
        + "Access-Control-Request-Method: POST\r\n"
        + "Access-Control-Request-Headers: authorization, content-type, idempotency-key\r\n"
        + "X-Request-Id: preflight-1\r\n\r\n")
    let expected =
      "HTTP/1.1 204 No Content\r\n"
      + "Date: -\r\n"
      + "Connection: keep-alive\r\n"
      + "Access-Control-Allow-Origin: http://127.0.0.1:5173\r\n"
      + "Access-Control-Allow-Methods: GET, HEAD, POST, PATCH, DELETE, OPTIONS\r\n"
      + "Access-Control-Allow-Headers: Authorization, Content-Type, Idempotency-Key, "
      + "Upload-Draft-Interop-Version, Upload-Complete, Upload-Incomplete, Upload-Offset, Upload-Length, "
      + "Upload-Limit, Tus-Resumable, Upload-Metadata, Upload-Defer-Length, Upload-Checksum, Upload-Concat, "
      + "X-HTTP-Method-Override, X-Request-Id\r\n"
      + "Access-Control-Max-Age: 600\r\n"
      + "Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r\n"
      + "Cache-Control: no-store\r\n"
      + "X-Request-Id: preflight-1\r\n"
      + "\r\n"
    #expect(answer == expected)
  }

  @Test func aTenantsOriginIsPreflightedForAnyPathButReadsOnlyItsOwnTenantsAnswers() throws {
    let server = try Self.server()
    defer { server.stop() }
    let preflight = try Self.exchange(
      port: Self.port(server),
      "OPTIONS /v1/attachments/att_x/meta HTTP/1.1\r\nHost: a\r\nOrigin: \(Self.tenantPage)\r\n"
        + "Access-Control-Request-Method: GET\r\n\r\n")
    #expect(preflight.hasPrefix("HTTP/1.1 204 No Content\r\n"))
    #expect(preflight.contains("Access-Control-Allow-Origin: \(Self.tenantPage)\r\n"))
    let path = "/v1/attachments/att_00000000000000000000000000/meta"
    let acme = try server.curl(
      path, ["-H", "Origin: \(Self.tenantPage)", "-H", AttachmentServer.bearer(AttachmentServer.acmeKey)])
    #expect(acme.status == 404)
    #expect(acme.headers["access-control-allow-origin"] == Self.tenantPage)
    let beta = try server.curl(
      path, ["-H", "Origin: \(Self.tenantPage)", "-H", AttachmentServer.bearer(AttachmentServer.betaKey)])
    #expect(beta.status == 404)
    #expect(beta.headers.keys.filter { $0.hasPrefix("access-control-") }.isEmpty)
    #expect(beta.headers["vary"] == "Origin")
  }

  @Test func answersToAListedOriginExposeTheUploadHeaders() throws {
    let server = try Self.server()
    defer { server.stop() }
    let directory = try LiveTesting.temporaryDirectory()
    let png = try TokenBackend.smallPNG(in: directory, side: 40)
    let upload = try server.upload(file: png, headers: ["Origin: \(Self.page)"])
    #expect(upload.status == 201)
    #expect(upload.headers["access-control-allow-origin"] == Self.page)
    #expect(
      upload.headers["access-control-expose-headers"]
        == "Location, X-Request-Id, Upload-Offset, Upload-Length, Upload-Limit, Upload-Complete, "
        + "Upload-Incomplete, Upload-Expires, Tus-Resumable, Tus-Version, Tus-Max-Size, Tus-Extension, "
        + "Content-Location, Retry-After")
    #expect(upload.headers["vary"] == "Origin")
    #expect(upload.headers["access-control-allow-credentials"] == nil)
    // The server's own answers carry them too (here a 401 decided before any route work).
    let refused = try server.curl(
      "/v1/attachments", ["-X", "POST", "-H", "Origin: \(Self.page)", "--data-binary", "x"])
    #expect(refused.status == 401)
    #expect(refused.headers["access-control-allow-origin"] == Self.page)
  }

  @Test func anOriginOnNoListGetsNoCORSHeaderAtAll() throws {
    let server = try Self.server()
    defer { server.stop() }
    let port = Self.port(server)
    for origin in ["https://evil.example", "null", "http://127.0.0.1:5174", "HTTP://127.0.0.1:5173"] {
      let preflight = try Self.exchange(
        port: port,
        "OPTIONS /v1/attachments HTTP/1.1\r\nHost: a\r\nOrigin: \(origin)\r\n"
          + "Access-Control-Request-Method: POST\r\n\r\n")
      // Not a preflight: routed as a plain OPTIONS, which this route answers only to a caller
      // with the upload scope (it tells resumable clients their limits).
      #expect(preflight.hasPrefix("HTTP/1.1 401 "), "\(origin): \(preflight)")
      #expect(!preflight.lowercased().contains("access-control-"), "\(origin)")
      let read = try server.curl("/healthz", ["-H", "Origin: \(origin)"])
      #expect(read.status == 200)
      #expect(read.headers.keys.filter { $0.hasPrefix("access-control-") }.isEmpty, "\(origin)")
    }
  }

  @Test func withoutAListNothingChanges() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let read = try server.curl("/healthz", ["-H", "Origin: \(Self.page)"])
    #expect(read.headers.keys.filter { $0.hasPrefix("access-control-") || $0 == "vary" }.isEmpty)
  }

  @Test(arguments: [
    "*", "null", "https://a.example/", "https://a.example/path", "ftp://a.example", "https://",
  ])
  func aWildcardNullOrPathIsRefusedAsAnOrigin(_ origin: String) {
    var configuration = CORSPolicy.Configuration()
    configuration.allowedOrigins = [origin]
    #expect(throws: ConfigurationError.self) { try configuration.validate() }
  }
}
