import Foundation
import TestSupport
import Testing

@testable import App

/// An `AttachmentServer` with helpers for tus: exact requests over `TusWire`, small images.
struct TusServer {
  let server: AttachmentServer
  let port: Int

  static let acme = ("Authorization", "Bearer " + AttachmentServer.acmeKey)
  static let beta = ("Authorization", "Bearer " + AttachmentServer.betaKey)
  static let tus = ("Tus-Resumable", "1.0.0")
  static let stream = ("Content-Type", "application/offset+octet-stream")

  init(configure: (inout Application.Configuration) -> Void = { _ in }) throws {
    server = try AttachmentServer(configure: configure)
    port = Int(server.base.split(separator: ":").last!)!
  }

  func stop() { server.stop() }

  /// A fresh connection.
  func wire() throws -> TusWire { try TusWire(port: port) }

  /// One request on a fresh connection.
  func request(_ method: String, _ path: String, _ fields: [(String, String)], body: [UInt8]? = nil) throws
    -> TusWire.Response
  {
    try wire().request(method, path, fields, body: body)
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
    throws -> TusWire.Response
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
