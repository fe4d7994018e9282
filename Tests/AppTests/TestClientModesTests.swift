import AttachdTesting
import Foundation
import HTTP
import TestSupport
import Testing

@testable import App

/// The test client's two modes answer alike on the App: what in-process tests see is what the
/// real server sends.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TestClientModesTests {
  @Test func inProcessAndLiveGiveTheSameAnswersOnTheSameApp() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let directory = try LiveTesting.temporaryDirectory()
    let uploaded = try server.post(file: try TokenBackend.smallPNG(in: directory, side: 40))
    let record = try #require(uploaded.json)
    let id = try #require(record["id"] as? String)
    let etag = "\"\(record["sha256"] as? String ?? "")\""
    let acme = AttachmentServer.auth(AttachmentServer.acmeKey)
    let requests: [(String, String, HTTPHeaders)] = [
      ("GET", "/healthz", [:]), ("HEAD", "/healthz", [:]), ("DELETE", "/healthz", [:]),
      ("GET", "/nope?x=1", [:]), ("GET", "/openapi.json", [:]),
      ("GET", "/v1/attachments/\(id)", acme), ("HEAD", "/v1/attachments/\(id)", acme),
      ("GET", "/v1/attachments/\(id)", acme + ["Range": "bytes=10-19"]),
      ("GET", "/v1/attachments/\(id)", acme + ["If-None-Match": etag]),
      ("GET", "/v1/attachments/\(id)/meta", acme),
      ("GET", "/v1/attachments/\(id)", AttachmentServer.auth(AttachmentServer.betaKey)),
      ("GET", "/v1/attachments/\(id)", [:]),
      ("OPTIONS", "/v1/attachments", acme + ["Upload-Draft-Interop-Version": "8"]),
    ]
    for (method, target, headers) in requests {
      let fixed = headers + ["X-Request-Id": "same-id"]
      let inProcess = try server.client.execute(method, target, headers: fixed)
      let live = try server.live.execute(method, target, headers: fixed)
      #expect(inProcess.status == live.status, "\(method) \(target)")
      #expect(
        inProcess.headers.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" }
          == live.headers.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" },
        "\(method) \(target)")
      #expect(inProcess.body == live.body, "\(method) \(target)")
    }
  }
}
