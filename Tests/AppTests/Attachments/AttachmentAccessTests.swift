import AttachdTesting
import Foundation
import HTTP
import TestSupport
import Testing

@testable import App
@testable import Storage

/// Keys, scopes, tenants, signed links, idempotency and the read side of the API, through the
/// in-process client.
@Suite(
  .serialized, .timeLimit(.minutes(2)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct AttachmentAccessTests {
  static let file = UploadClientTests.corpusPath("jpeg-orient-1.jpg")
  static let acme = AttachmentServer.auth(AttachmentServer.acmeKey)

  /// A problem body without its per-request `instance`.
  static func shape(_ reply: TestResponse) -> [String: String] {
    var json = (reply.json ?? [:]).compactMapValues { "\($0)" }
    json["instance"] = nil
    return json
  }

  @Test func keysAndScopesAreCheckedBeforeAnyWork() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    let image = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.file)))
    let none = try client.execute("POST", "/v1/attachments", body: .bytes(image))
    #expect(none.status == 401 && none.code == "unauthorized")
    let bad = try server.post(file: Self.file, key: "acme-key-0123456789abcdef0124")
    #expect(bad.status == 401 && bad.code == "unauthorized")
    let uploaded = try server.post(file: Self.file, key: AttachmentServer.uploadOnlyKey)
    #expect(uploaded.status == 201)
    let id = try #require(uploaded.json?["id"] as? String)
    let uploadOnly = AttachmentServer.auth(AttachmentServer.uploadOnlyKey)
    let read = try client.execute("GET", "/v1/attachments/\(id)", headers: uploadOnly)
    #expect(read.status == 403 && read.code == "forbidden")
    let delete = try client.execute("DELETE", "/v1/attachments/\(id)", headers: uploadOnly)
    #expect(delete.status == 403)
    #expect(try client.execute("GET", "/v1/attachments/\(id)").status == 401)
  }

  @Test func anotherTenantsIdAnswersExactlyLikeAMissingOne() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    let id = try #require(try server.post(file: Self.file).json?["id"] as? String)
    let beta = AttachmentServer.auth(AttachmentServer.betaKey)
    let other = try client.execute("GET", "/v1/attachments/\(id)", headers: beta)
    let missing = try client.execute("GET", "/v1/attachments/att_00000000000000000000000000", headers: beta)
    let malformed = try client.execute("GET", "/v1/attachments/..%2F..%2Fetc", headers: beta)
    for reply in [other, missing, malformed] {
      #expect(reply.status == 404)
      #expect(Self.shape(reply) == Self.shape(missing))
      #expect(reply["content-length"] == missing["content-length"])
    }
    #expect(try client.execute("GET", "/v1/attachments/\(id)/meta", headers: beta).status == 404)
    #expect(try client.execute("DELETE", "/v1/attachments/\(id)", headers: beta).status == 404)
    #expect(try client.execute("GET", "/v1/attachments/\(id)", headers: Self.acme).status == 200)
  }

  @Test func signedLinksServeWithoutAKeyUntilTheyExpireAndRefuseTampering() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    let record = try #require(try server.post(file: Self.file).json)
    let id = try #require(record["id"] as? String)
    let link = try #require(record["signed_url"] as? String)
    let good = try client.execute("GET", link)
    #expect(good.status == 200)
    #expect(good.body.count == record["bytes"] as? Int)
    let tampered = link.replacingOccurrences(of: "exp=", with: "exp=1")
    #expect(try client.execute("GET", tampered).code == "signed_link_invalid")
    let otherID = try #require(try server.post(file: Self.file).json?["id"] as? String)
    let moved = link.replacingOccurrences(of: id, with: otherID)
    let movedReply = try client.execute("GET", moved)
    #expect(movedReply.status == 403 && movedReply.code == "signed_link_invalid")
    let signer = server.app.attachments.access.signer
    let expired = signer.make(id: id, tenant: "acme", expiresAt: Int(Date().timeIntervalSince1970) - 10)
    let expiredReply = try client.execute("GET", expired)
    #expect(expiredReply.status == 403 && expiredReply.code == "signed_link_expired")
    let wrongTenant = signer.make(id: id, tenant: "beta", expiresAt: Int(Date().timeIntervalSince1970) + 100)
    #expect(try client.execute("GET", wrongTenant).code == "signed_link_invalid")
  }

  @Test func rangesValidatorsHeadAndDeleteBehaveAsHTTPSays() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    let record = try #require(try server.post(file: Self.file).json)
    let id = try #require(record["id"] as? String)
    let size = try #require(record["bytes"] as? Int)
    let path = "/v1/attachments/\(id)"
    let whole = try client.execute("GET", path, headers: Self.acme)
    let etag = "\"\(record["sha256"] as? String ?? "")\""
    #expect(whole["etag"] == etag)
    #expect(whole["cache-control"] == "private, max-age=86400, immutable")
    #expect(whole["content-type"] == "image/jpeg")
    let part = try client.execute("GET", path, headers: Self.acme + ["Range": "bytes=10-19"])
    #expect(part.status == 206)
    #expect(part["content-range"] == "bytes 10-19/\(size)")
    #expect(part.body[...] == whole.body[10..<20])
    let suffix = try client.execute("GET", path, headers: Self.acme + ["Range": "bytes=-5"])
    #expect(suffix.status == 206 && suffix.body[...] == whole.body.suffix(5))
    let open = try client.execute("GET", path, headers: Self.acme + ["Range": "bytes=\(size - 3)-"])
    #expect(open.status == 206 && open.body.count == 3)
    let beyond = try client.execute("GET", path, headers: Self.acme + ["Range": "bytes=\(size)-"])
    #expect(beyond.status == 416 && beyond["content-range"] == "bytes */\(size)")
    let several = try client.execute("GET", path, headers: Self.acme + ["Range": "bytes=0-1,5-6"])
    #expect(several.status == 200 && several.body.count == size)
    let cached = try client.execute("GET", path, headers: Self.acme + ["If-None-Match": etag])
    #expect(cached.status == 304 && cached.body.isEmpty && cached["etag"] == etag)
    let head = try client.execute("HEAD", path, headers: Self.acme)
    #expect(head.status == 200 && head.body.isEmpty && head["content-length"] == String(size))
    let meta = try client.execute("GET", path + "/meta", headers: Self.acme)
    #expect(
      meta.json?["id"] as? String == id && meta.json?["sha256"] as? String == record["sha256"] as? String)
    #expect(try client.execute("DELETE", path, headers: Self.acme).status == 204)
    #expect(try client.execute("GET", path, headers: Self.acme).status == 404)
    #expect(try client.execute("GET", path + "/meta", headers: Self.acme).status == 404)
    #expect(try client.execute("DELETE", path, headers: Self.acme).status == 404)
  }

  @Test func anIdempotencyKeyReplaysTheFirstAnswerAndRefusesAnotherBody() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let key: HTTPHeaders = ["Idempotency-Key": "order-1"]
    let first = try server.post(file: Self.file, headers: key)
    #expect(first.status == 201)
    let again = try server.post(file: Self.file, headers: key)
    #expect(again.status == 201)
    #expect(again.body == first.body)
    #expect(again["location"] == first["location"])
    #expect(again["idempotent-replayed"] == "true")
    let other = try server.post(file: UploadClientTests.corpusPath("jpeg-orient-2.jpg"), headers: key)
    #expect(other.status == 422 && other.code == "idempotency_mismatch")
    let betaSame = try server.post(file: Self.file, key: AttachmentServer.betaKey, headers: key)
    #expect(betaSame.status == 201 && betaSame.body != first.body)
  }

  /// A node that stored the attachment and died before it kept the key's answer: the retry (its
  /// claim released as a dead node's) does the work again and finds the same attachment — the
  /// id is derived from the tenant, the key and the body — instead of making a twin.
  @Test func aRetryOfWorkStoredBeforeItsAnswerWasKeptFindsTheSameAttachment() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let key: HTTPHeaders = ["Idempotency-Key": "lost-answer-1"]
    let first = try server.post(file: Self.file, headers: key)
    let id = try #require(first.json?["id"] as? String)
    let index = try #require(server.app.attachments.store.index as? SQLiteIndex)
    try index.write { try $0.query("DELETE FROM idempotency_keys") }
    let again = try server.post(file: Self.file, headers: key)
    #expect(again.status == 201 && again["idempotent-replayed"] == nil)
    #expect(again.json?["id"] as? String == id)
    #expect(try index.statistics().attachments == 1)
    // Other bytes under the same key, once its record is gone, are another attachment.
    try index.write { try $0.query("DELETE FROM idempotency_keys") }
    let other = try server.post(file: UploadClientTests.corpusPath("jpeg-orient-2.jpg"), headers: key)
    #expect(other.status == 201 && other.json?["id"] as? String != id)
    #expect(try index.statistics().attachments == 2)
  }

  @Test func anIdempotentRetryWhileTheFirstBodyIsStillArrivingGets409() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    // The first request sends half its chunked body, then (after the retry) the rest.
    let body = [UInt8](try Data(contentsOf: URL(fileURLWithPath: Self.file)))
    let key: HTTPHeaders = ["Idempotency-Key": "slow-1"]
    let first = try server.client.start(
      "POST", "/v1/attachments", headers: Self.acme + key, framing: .chunked)
    try first.send(Array(body[..<(body.count / 2)]))
    let service = server.app.attachments
    #expect(LiveTesting.waitUntil(seconds: 10) { service.metrics.uploadsInFlight.current == 1 })
    let during = try server.post(file: Self.file, headers: key)
    #expect(during.status == 409 && during.code == "idempotency_in_progress")
    try first.send(Array(body[(body.count / 2)...]))
    #expect(try first.finish().status == 201)
    let after = try server.post(file: Self.file, headers: key)
    #expect(after.status == 201 && after["idempotent-replayed"] == "true")
  }

  @Test func metricsAndReadinessReportTheService() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    #expect(try server.post(file: Self.file).status == 201)
    #expect(
      try client.execute("POST", "/v1/attachments", headers: Self.acme, body: .bytes(Array("hello".utf8)))
        .status == 415)
    let ready = try client.execute("GET", "/readyz")
    #expect(ready.status == 200)
    let metrics = try client.execute("GET", "/metrics")
    #expect(metrics.status == 200)
    let text = String(decoding: metrics.body, as: UTF8.self)
    for family in [
      #"attachd_http_requests_total{route="/v1/attachments",method="POST",status="201"} 1"#,
      "attachd_http_request_bytes_total", "attachd_http_response_bytes_total",
      #"attachd_pipeline_stage_seconds_bucket{stage="sniff""#,
      #"attachd_input_format_total{format="jpeg"} 1"#,
      #"attachd_rejections_total{code="unsupported_format"} 1"#, "attachd_worker_queue_depth 0",
      "attachd_memory_budget_bytes_in_use ", "attachd_stored_objects 1", "attachd_stored_bytes ",
      "attachd_uploads_in_flight 0",
    ] {
      #expect(text.contains(family), "missing \(family)")
    }
  }
}
