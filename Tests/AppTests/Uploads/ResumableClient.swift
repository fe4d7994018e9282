import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// The header sets a resumable-upload client sends for each interop version, as iOS
/// `URLSession` sends them where a version is Apple's (17.x: 3, 18.0: 5, 18.1+: 6, 26: 8) and
/// as the draft's own examples spell them for 4 and 7: completeness on the creation and every
/// append, `Upload-Length` on the creation where the version has it and the client knows it
/// (iOS 26), `application/partial-upload` on appends from 6. Plus what every `URLSession`
/// request carries (`Accept`, `Accept-Language`, `Accept-Encoding`, a CFNetwork `User-Agent`).
struct ResumableClient {
  let version: Int
  let key: String
  let port: Int
  /// What the client is called in test names.
  var name: String {
    switch version {
    case 3: "iOS 17 (interop 3)"
    case 5: "iOS 18.0 (interop 5)"
    case 6: "iOS 18.1+ (interop 6)"
    case 8: "iOS 26 (interop 8)"
    default: "draft client (interop \(version))"
    }
  }

  static let urlSessionFields = [
    "Accept: */*", "Accept-Language: en-GB,en;q=0.9", "Accept-Encoding: gzip, deflate, br",
    "User-Agent: Chat/1.0 CFNetwork/1568.100.1 Darwin/24.0.0",
  ]

  /// The completeness field saying `complete`.
  func completeness(_ complete: Bool) -> String {
    version == 3
      ? "Upload-Incomplete: \(complete ? "?0" : "?1")" : "Upload-Complete: \(complete ? "?1" : "?0")"
  }

  /// The creation head for a body of `length` bytes (all of it meant to come in this request).
  func creation(length: Int, complete: Bool = true, contentType: String = "image/jpeg", extra: [String] = [])
    -> String
  {
    var fields = [
      "Host: 127.0.0.1:\(port)", "Authorization: Bearer \(key)", "Content-Type: \(contentType)",
      "Content-Length: \(length)", "Upload-Draft-Interop-Version: \(version)", completeness(complete),
    ]
    if version >= 7 && complete { fields.append("Upload-Length: \(length)") }
    return TestConnection.head("POST /v1/attachments HTTP/1.1", fields + Self.urlSessionFields + extra)
  }

  /// The offset-retrieval head.
  func offsetRetrieval(_ path: String) -> String {
    TestConnection.head(
      "HEAD \(path) HTTP/1.1",
      ["Host: 127.0.0.1:\(port)", "Authorization: Bearer \(key)", "Upload-Draft-Interop-Version: \(version)"]
        + Self.urlSessionFields)
  }

  /// The append head: `length` bytes at `offset`.
  func append(_ path: String, offset: Int, length: Int, complete: Bool = true, extra: [String] = []) -> String
  {
    var fields = [
      "Host: 127.0.0.1:\(port)", "Authorization: Bearer \(key)", "Upload-Draft-Interop-Version: \(version)",
      "Upload-Offset: \(offset)", completeness(complete), "Content-Length: \(length)",
    ]
    if version >= 6 { fields.append("Content-Type: application/partial-upload") }
    return TestConnection.head("PATCH \(path) HTTP/1.1", fields + Self.urlSessionFields + extra)
  }

  /// The cancellation head.
  func cancellation(_ path: String) -> String {
    TestConnection.head(
      "DELETE \(path) HTTP/1.1",
      ["Host: 127.0.0.1:\(port)", "Authorization: Bearer \(key)", "Upload-Draft-Interop-Version: \(version)"]
        + Self.urlSessionFields)
  }

  /// The path of an absolute upload URL (`http://host:port/v1/uploads/upl_…`).
  static func path(of location: String) -> String {
    guard let range = location.range(of: "/v1/uploads/") else { return location }
    return String(location[range.lowerBound...])
  }

  // MARK: - Flows

  /// What an interrupted upload saw: the creation's 104, the offset retrieval, the append's answer.
  struct Resumed {
    var interim: TestResponse
    var offset: TestResponse
    var final: TestResponse
    var sentBeforeDrop: Int
    var path: String
  }

  /// Creation with the whole body announced, cut after `cut` bytes (the connection closed), then
  /// offset retrieval and an append of the rest, each on a new connection — as a phone does
  /// after a drop. `connect` picks the port (an HAProxy in front, or attachd itself).
  func interruptedUpload(_ body: [UInt8], cut: Int, contentType: String = "image/jpeg") throws -> Resumed {
    let first = try TestConnection.live(port: port)
    try first.send(creation(length: body.count, contentType: contentType))
    // The 104 comes before any body byte is sent.
    let interim = try first.readResponse()
    try first.send(Array(body[0..<cut]))
    // Let the bytes land before the drop, as a radio that stops mid-transfer would.
    usleep(100_000)
    first.close()
    let location = try #require(interim["Location"])
    let path = Self.path(of: location)
    // The offset on one connection, the rest on another, as a phone back on the network does.
    // (Once, on a loaded CI machine, the append sent on the offset's connection found it closed;
    // the offset's answer is now part of any failure.)
    let second = try TestConnection.live(port: port)
    try second.send(offsetRetrieval(path))
    let offset = try second.readResponse(forHead: true)
    second.close()
    let resumeAt = Int(offset["Upload-Offset"] ?? "") ?? 0
    let third = try TestConnection.live(port: port)
    defer { third.close() }
    try third.send(append(path, offset: resumeAt, length: body.count - resumeAt))
    try third.send(Array(body[resumeAt...]))
    do {
      let final = try third.readFinal()
      return Resumed(interim: interim, offset: offset, final: final, sentBeforeDrop: cut, path: path)
    } catch {
      throw TestClientError("the append after the offset retrieval (\(offset.head)) got no answer: \(error)")
    }
  }
}
