import AttachdTesting
import Foundation
import HTTP
import TestSupport
import Testing

@testable import App

/// An `AttachmentServer` with helpers for tus: exact requests (in-process unless a test needs the
/// socket), small images.
struct TusServer {
  let server: AttachmentServer
  let port: Int

  static let acme = ("Authorization", "Bearer " + AttachmentServer.acmeKey)
  static let beta = ("Authorization", "Bearer " + AttachmentServer.betaKey)
  static let tus = ("Tus-Resumable", "1.0.0")
  static let stream = ("Content-Type", "application/offset+octet-stream")

  init(configure: (inout Application.Configuration) -> Void = { _ in }) throws {
    server = try AttachmentServer(configure: configure)
    port = server.port
  }

  func stop() { server.stop() }

  /// The request fields `fields` after the `Host` a tus client sends for 127.0.0.1:`port`
  /// (upload URLs are made from it).
  static func headers(port: Int, _ fields: [(String, String)]) -> HTTPHeaders {
    HTTPHeaders([("Host", "127.0.0.1:\(port)")] + fields)
  }

  /// One request (with `Content-Length` when `body` is given) through the in-process client.
  func request(_ method: String, _ path: String, _ fields: [(String, String)], body: [UInt8]? = nil) throws
    -> TestResponse
  {
    try server.client.execute(
      method, path, headers: Self.headers(port: port, fields), body: body.map { .bytes($0) } ?? .empty)
  }

  /// One request over a socket to the server on 127.0.0.1:`port`.
  static func request(
    port: Int, _ method: String, _ path: String, _ fields: [(String, String)], body: [UInt8]? = nil,
    timeout: Double = 10
  ) throws -> TestResponse {
    var configuration = TestClient.Configuration()
    configuration.timeout = timeout
    return try TestClient(.live(port: port), configuration: configuration).execute(
      method, path, headers: headers(port: port, fields), body: body.map { .bytes($0) } ?? .empty)
  }

  /// A request whose body the test sends itself: in-process, or with `live` over the socket.
  func start(_ method: String, _ path: String, _ fields: [(String, String)], live: Bool = false) throws
    -> TestExchange
  {
    try (live ? server.live : server.client).start(method, path, headers: Self.headers(port: port, fields))
  }

  /// Creates an upload of `length` bytes (or deferred) with the acme key; returns its path.
  func create(length: Int?, auth: (String, String) = acme, metadata: String? = nil) throws -> String {
    var fields = [Self.tus, auth]
    fields.append(length.map { ("Upload-Length", String($0)) } ?? ("Upload-Defer-Length", "1"))
    if let metadata { fields.append(("Upload-Metadata", metadata)) }
    let created = try request("POST", "/v1/tus", fields)
    #expect(created.status == 201, "creation: \(created.status) \(created.code ?? "")")
    let location = try #require(created["Location"])
    return try #require(URL(string: location)?.path)
  }

  /// A PATCH of `bytes` at `offset`.
  func patch(
    _ path: String, offset: Int, _ bytes: [UInt8], auth: (String, String) = acme,
    extra: [(String, String)] = []
  )
    throws -> TestResponse
  {
    try request(
      "PATCH", path, [Self.tus, auth, Self.stream, ("Upload-Offset", String(offset))] + extra, body: bytes)
  }

  /// The small PNG `TokenBackend` writes, as bytes.
  static func png(side: Int = 32, seed: UInt8 = 1) -> [UInt8] {
    let pixels = (0..<(side * side * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    return PNGWriter.png(width: side, height: side, colourType: 2, pixels: pixels)
  }

  /// A plain upload of `bytes` (the record a tus upload of the same bytes must equal).
  func plainRecord(_ bytes: [UInt8]) throws -> [String: Any] {
    let response = try request("POST", "/v1/attachments", [Self.acme], body: bytes)
    #expect(response.status == 201)
    return try #require(response.json)
  }

  /// The fields of a record that depend only on the bytes (not on the id or the time).
  static func content(_ record: [String: Any]) -> [String: String] {
    var out: [String: String] = [:]
    for key in ["content_type", "width", "height", "bytes", "sha256", "owner"] {
      out[key] = "\(record[key] ?? "nil")"
    }
    let source = record["source"] as? [String: Any] ?? [:]
    for (key, value) in source { out["source." + key] = "\(value)" }
    return out
  }
}
