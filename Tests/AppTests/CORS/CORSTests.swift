import AttachdTesting
import Foundation
import HTTP
import Testing

@testable import App

/// CORS: preflights answered before authentication, byte for byte on the live server; answers
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

  /// The whole answer to `request` on a fresh connection to the live server, as it came (the
  /// `Date` value replaced with `-`).
  static func exchange(_ server: AttachmentServer, _ request: String) throws -> String {
    let connection = try server.live.connect()
    try connection.send(request)
    let reply = try connection.readResponse()
    let head = reply.head.split(separator: "\r\n", omittingEmptySubsequences: false).map { line in
      line.hasPrefix("Date: ") ? "Date: -" : String(line)
    }
    return head.joined(separator: "\r\n") + "\r\n\r\n" + reply.text
  }

  @Test func aPreflightFromAListedOriginIsAnsweredByteForByteBeforeAuthentication() throws {
    let server = try Self.server()
    defer { server.stop() }
    let answer = try Self.exchange(
      server,
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
      server,
      "OPTIONS /v1/attachments/att_x/meta HTTP/1.1\r\nHost: a\r\nOrigin: \(Self.tenantPage)\r\n"
        + "Access-Control-Request-Method: GET\r\n\r\n")
    #expect(preflight.hasPrefix("HTTP/1.1 204 No Content\r\n"))
    #expect(preflight.contains("Access-Control-Allow-Origin: \(Self.tenantPage)\r\n"))
    let path = "/v1/attachments/att_00000000000000000000000000/meta"
    let origin: HTTPHeaders = ["Origin": Self.tenantPage]
    let acme = try server.client.execute(
      "GET", path, headers: origin + AttachmentServer.auth(AttachmentServer.acmeKey))
    #expect(acme.status == 404)
    #expect(acme["access-control-allow-origin"] == Self.tenantPage)
    let beta = try server.client.execute(
      "GET", path, headers: origin + AttachmentServer.auth(AttachmentServer.betaKey))
    #expect(beta.status == 404)
    #expect(beta.names.filter { $0.hasPrefix("access-control-") }.isEmpty)
    #expect(beta["vary"] == "Origin")
  }

  @Test func answersToAListedOriginExposeTheUploadHeaders() throws {
    let server = try Self.server()
    defer { server.stop() }
    let directory = try LiveTesting.temporaryDirectory()
    let png = try TokenBackend.smallPNG(in: directory, side: 40)
    let upload = try server.post(file: png, headers: ["Origin": Self.page])
    #expect(upload.status == 201)
    #expect(upload["access-control-allow-origin"] == Self.page)
    #expect(
      upload["access-control-expose-headers"]
        == "Location, X-Request-Id, Upload-Offset, Upload-Length, Upload-Limit, Upload-Complete, "
        + "Upload-Incomplete, Upload-Expires, Tus-Resumable, Tus-Version, Tus-Max-Size, Tus-Extension, "
        + "Content-Location, Retry-After")
    #expect(upload["vary"] == "Origin")
    #expect(upload["access-control-allow-credentials"] == nil)
    // The server's own answers carry them too (here a 401 decided before any route work).
    let refused = try server.client.execute(
      "POST", "/v1/attachments", headers: ["Origin": Self.page], body: .bytes(Array("x".utf8)))
    #expect(refused.status == 401)
    #expect(refused["access-control-allow-origin"] == Self.page)
  }

  @Test func anOriginOnNoListGetsNoCORSHeaderAtAll() throws {
    let server = try Self.server()
    defer { server.stop() }
    for origin in ["https://evil.example", "null", "http://127.0.0.1:5174", "HTTP://127.0.0.1:5173"] {
      let preflight = try Self.exchange(
        server,
        "OPTIONS /v1/attachments HTTP/1.1\r\nHost: a\r\nOrigin: \(origin)\r\n"
          + "Access-Control-Request-Method: POST\r\n\r\n")
      // Not a preflight: routed as a plain OPTIONS, which this route answers only to a caller
      // with the upload scope (it tells resumable clients their limits).
      #expect(preflight.hasPrefix("HTTP/1.1 401 "), "\(origin): \(preflight)")
      #expect(!preflight.lowercased().contains("access-control-"), "\(origin)")
      let read = try server.client.execute("GET", "/healthz", headers: ["Origin": origin])
      #expect(read.status == 200)
      #expect(read.names.filter { $0.hasPrefix("access-control-") }.isEmpty, "\(origin)")
    }
  }

  @Test func withoutAListNothingChanges() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let read = try server.client.execute("GET", "/healthz", headers: ["Origin": Self.page])
    #expect(read.names.filter { $0.hasPrefix("access-control-") || $0 == "vary" }.isEmpty)
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
