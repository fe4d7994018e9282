import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// The rules every upload follows, for tus: credentials on every request, an upload that only
/// its creator sees, expiry and the sweep, the caller's limits.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct TusAccessTests {
  typealias S = TusServer

  /// A problem body without its per-request `instance`.
  static func shape(_ response: TestResponse) -> [String: String] {
    var json = (response.json ?? [:]).compactMapValues { "\($0)" }
    json["instance"] = nil
    return json
  }

  @Test func everyRequestNeedsAKeyAndTheUploadScope() throws {
    let tus = try TusServer { config in
      config.auth.keys.append(HashedKey(tenant: "acme", scopes: [.read], key: TusAccessTests.readOnlyKey))
    }
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    let readOnly = ("Authorization", "Bearer " + TusAccessTests.readOnlyKey)
    for (method, target) in [
      ("POST", "/v1/tus"), ("HEAD", path), ("PATCH", path), ("DELETE", path), ("GET", path),
    ] {
      let fields = [S.tus, S.stream, ("Upload-Length", "10"), ("Upload-Offset", "0")]
      let none = try tus.request(method, target, fields, body: method == "HEAD" ? nil : [])
      #expect(none.status == 401, "\(method)")
      #expect(none["Tus-Resumable"] == "1.0.0")
      let wrong = try tus.request(method, target, fields + [readOnly], body: method == "HEAD" ? nil : [])
      #expect(wrong.status == 403, "\(method)")
    }
  }

  static let readOnlyKey = "acme-read-only-0123456789abcd"

  @Test func anotherTenantsUploadAnswersExactlyLikeAMissingOne() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 10)
    #expect(try tus.patch(path, offset: 0, [1, 2, 3]).status == 204)
    let missing = "/v1/tus/upl_00000000000000000000000000"
    for target in [path, missing, "/v1/tus/..%2Fetc"] {
      for method in ["HEAD", "GET", "DELETE"] {
        let response = try tus.request(method, target, [S.tus, S.beta], body: method == "HEAD" ? nil : [])
        #expect(response.status == 404, "\(method) \(target)")
        if method != "HEAD" {
          #expect(
            Self.shape(response) == [
              "type": "about:blank", "status": "404", "code": "not_found", "title": "Not found",
            ])
        }
        #expect(response["Upload-Offset"] == nil)
      }
      let patch = try tus.patch(target, offset: 3, [4], auth: S.beta)
      #expect(patch.status == 404 && patch["Upload-Offset"] == nil)
    }
    // The owner's upload was not disturbed.
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head.status == 200 && head["Upload-Offset"] == "3")
  }

  @Test func aTokensUploadIsItsUsersAlone() throws {
    let backend = try TokenBackend()
    let tus = try TusServer { $0.auth.tokens.keys = backend.tokenKeys }
    defer { tus.stop() }
    let tokens = try backend.mint([
      TokenBackend.acme("alice"), TokenBackend.acme("bob"),
      TokenBackend.acme("carol", extra: ["jti": "small", "max_bytes": 5000]),
    ])
    let alice = ("Authorization", "Bearer " + tokens[0])
    let bob = ("Authorization", "Bearer " + tokens[1])
    let carol = ("Authorization", "Bearer " + tokens[2])
    let image = S.png(seed: 4)
    let path = try tus.create(length: image.count, auth: alice)
    #expect(try tus.patch(path, offset: 0, Array(image[..<50]), auth: alice).status == 204)
    for auth in [bob, S.acme] {
      #expect(try tus.request("HEAD", path, [S.tus, auth]).status == 404)
      #expect(try tus.patch(path, offset: 50, Array(image[50...]), auth: auth).status == 404)
      #expect(try tus.request("DELETE", path, [S.tus, auth], body: []).status == 404)
    }
    let last = try tus.patch(path, offset: 50, Array(image[50...]), auth: alice)
    #expect(last.status == 204)
    let get = try tus.request("GET", path, [S.tus, alice])
    #expect(get.json?["owner"] as? String == "alice")
    // A token's max_bytes is its Tus-Max-Size, and a creation over it is refused.
    let options = try tus.request("OPTIONS", "/v1/tus", [carol])
    #expect(options["Tus-Max-Size"] == "5000")
    let big = try tus.request("POST", "/v1/tus", [S.tus, carol, ("Upload-Length", "5001")], body: [])
    #expect(big.status == 403 && big.code == "token_max_bytes")
  }

  @Test func anExpiredUploadIsGoneAndTheSweepRemovesItsBytes() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let path = try tus.create(length: 100)
    #expect(try tus.patch(path, offset: 0, [UInt8](repeating: 9, count: 40)).status == 204)
    let id = String(path.split(separator: "/").last!)
    let data = tus.server.app.configuration.storage.dataDirectory
    let spool = data + "/uploads/" + id
    #expect(FileManager.default.fileExists(atPath: spool))
    // Time passes: the upload's expiry is moved into the past in the index itself.
    let (status, _) = try LiveTesting.run(
      "/usr/bin/sqlite3",
      [data + "/index.sqlite", "UPDATE uploads SET expires_at = strftime('%s','now') - 1 WHERE id = '\(id)'"])
    #expect(status == 0)
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head.status == 404 && head["Upload-Offset"] == nil)
    #expect(try tus.patch(path, offset: 40, [1]).status == 404)
    tus.server.app.sweeper.sweepOnce()
    #expect(!FileManager.default.fileExists(atPath: spool))
    let (_, rows) = try LiveTesting.run(
      "/usr/bin/sqlite3", [data + "/index.sqlite", "SELECT count(*) FROM uploads WHERE id = '\(id)'"])
    #expect(String(decoding: rows, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
  }

  @Test func theCallersUploadCapCountsPatchesInFlight() throws {
    let tus = try TusServer { $0.limits.uploads.maxConcurrentUploadsPerKey = 1 }
    defer { tus.stop() }
    let path = try tus.create(length: 2000)
    let other = try tus.create(length: 2000)
    // A PATCH whose body is still coming holds the key's one slot.
    let slow = try tus.start(
      "PATCH", path, [S.tus, S.acme, S.stream, ("Upload-Offset", "0"), ("Content-Length", "1000")])
    try slow.send([UInt8](repeating: 1, count: 100))
    #expect(
      LiveTesting.waitUntil(seconds: 5) { tus.server.app.attachments.access.uploadsInFlight == 1 })
    let refused = try tus.patch(other, offset: 0, [1, 2, 3])
    #expect(refused.status == 429 && refused.code == "too_many_uploads")
    #expect(refused["Retry-After"] == "1")
    try slow.send([UInt8](repeating: 1, count: 900))
    let done = try slow.response()
    #expect(done.status == 204 && done["Upload-Offset"] == "1000")
    #expect(try tus.patch(other, offset: 0, [1, 2, 3]).status == 204)
  }

  @Test func aNewRequestTakesAnUploadOverFromAPatchStillSending() throws {
    let tus = try TusServer { $0.uploads.commitInterval = 0.05 }
    defer { tus.stop() }
    let path = try tus.create(length: 1000)
    let id = String(path.split(separator: "/").last!)
    let store = tus.server.app.uploads.store
    let stale = try tus.start(
      "PATCH", path, [S.tus, S.acme, S.stream, ("Upload-Offset", "0"), ("Content-Length", "1000")])
    try stale.send([UInt8](repeating: 1, count: 300))
    // Looked at without disturbing the writer: the timer commit acknowledges what arrived.
    #expect(LiveTesting.waitUntil(seconds: 5) { (try? store.state(tenant: "acme", id: id))??.offset == 300 })
    // The client thinks that connection is dead and asks where to resume: the request in
    // flight is taken over, and the bytes that arrived are kept.
    let head = try tus.request("HEAD", path, [S.tus, S.acme])
    #expect(head["Upload-Offset"] == "300")
    let stopped = try stale.response()
    #expect(stopped.status == 409 && stopped.code == "upload_superseded")
    let resumed = try tus.patch(path, offset: 300, [UInt8](repeating: 1, count: 700))
    #expect(resumed.status == 415 || resumed.status == 422)  // all those bytes are no image
    #expect(resumed["Upload-Offset"] == "1000")
  }
}
