import Foundation
import TestSupport
import Testing

@testable import App

/// Keys, scopes, tenants, signed links, idempotency and the read side of the API.
@Suite(
  .serialized, .timeLimit(.minutes(2)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct AttachmentAccessTests {
  static let file = UploadClientTests.corpusPath("jpeg-orient-1.jpg")
  static let acme = AttachmentServer.bearer(AttachmentServer.acmeKey)

  /// A problem body without its per-request `instance`.
  static func shape(_ reply: LiveTesting.Reply) -> [String: String] {
    var json = (reply.json ?? [:]).compactMapValues { "\($0)" }
    json["instance"] = nil
    return json
  }

  @Test func keysAndScopesAreCheckedBeforeAnyWork() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let none = try server.curl("/v1/attachments", ["--data-binary", "@" + Self.file])
    #expect(none.status == 401 && none.code == "unauthorized")
    let bad = try server.upload(file: Self.file, key: "acme-key-0123456789abcdef0124")
    #expect(bad.status == 401 && bad.code == "unauthorized")
    let uploaded = try server.upload(file: Self.file, key: AttachmentServer.uploadOnlyKey)
    #expect(uploaded.status == 201)
    let id = try #require(uploaded.json?["id"] as? String)
    let read = try server.curl(
      "/v1/attachments/\(id)", ["-H", AttachmentServer.bearer(AttachmentServer.uploadOnlyKey)])
    #expect(read.status == 403 && read.code == "forbidden")
    let delete = try server.curl(
      "/v1/attachments/\(id)",
      ["-X", "DELETE", "-H", AttachmentServer.bearer(AttachmentServer.uploadOnlyKey)])
    #expect(delete.status == 403)
    #expect(try server.curl("/v1/attachments/\(id)", []).status == 401)
  }

  @Test func anotherTenantsIdAnswersExactlyLikeAMissingOne() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let id = try #require(try server.upload(file: Self.file).json?["id"] as? String)
    let beta = AttachmentServer.bearer(AttachmentServer.betaKey)
    let other = try server.curl("/v1/attachments/\(id)", ["-H", beta])
    let missing = try server.curl("/v1/attachments/att_00000000000000000000000000", ["-H", beta])
    let malformed = try server.curl("/v1/attachments/..%2F..%2Fetc", ["-H", beta])
    for reply in [other, missing, malformed] {
      #expect(reply.status == 404)
      #expect(Self.shape(reply) == Self.shape(missing))
      #expect(reply.headers["content-length"] == missing.headers["content-length"])
    }
    #expect(try server.curl("/v1/attachments/\(id)/meta", ["-H", beta]).status == 404)
    #expect(try server.curl("/v1/attachments/\(id)", ["-X", "DELETE", "-H", beta]).status == 404)
    #expect(try server.curl("/v1/attachments/\(id)", ["-H", Self.acme]).status == 200)
  }

  @Test func signedLinksServeWithoutAKeyUntilTheyExpireAndRefuseTampering() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let record = try #require(try server.upload(file: Self.file).json)
    let id = try #require(record["id"] as? String)
    let link = try #require(record["signed_url"] as? String)
    let good = try server.curl(link, [])
    #expect(good.status == 200)
    #expect(good.body.count == record["bytes"] as? Int)
    let tampered = link.replacingOccurrences(of: "exp=", with: "exp=1")
    #expect(try server.curl(tampered, []).code == "signed_link_invalid")
    let otherID = try #require(try server.upload(file: Self.file).json?["id"] as? String)
    let moved = link.replacingOccurrences(of: id, with: otherID)
    let movedReply = try server.curl(moved, [])
    #expect(movedReply.status == 403 && movedReply.code == "signed_link_invalid")
    let signer = server.app.attachments.access.signer
    let expired = signer.make(id: id, tenant: "acme", expiresAt: Int(Date().timeIntervalSince1970) - 10)
    let expiredReply = try server.curl(expired, [])
    #expect(expiredReply.status == 403 && expiredReply.code == "signed_link_expired")
    let wrongTenant = signer.make(id: id, tenant: "beta", expiresAt: Int(Date().timeIntervalSince1970) + 100)
    #expect(try server.curl(wrongTenant, []).code == "signed_link_invalid")
  }

  @Test func rangesValidatorsHeadAndDeleteBehaveAsHTTPSays() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let record = try #require(try server.upload(file: Self.file).json)
    let id = try #require(record["id"] as? String)
    let size = try #require(record["bytes"] as? Int)
    let path = "/v1/attachments/\(id)"
    let whole = try server.curl(path, ["-H", Self.acme])
    let etag = "\"\(record["sha256"] as? String ?? "")\""
    #expect(whole.headers["etag"] == etag)
    #expect(whole.headers["cache-control"] == "private, max-age=86400, immutable")
    #expect(whole.headers["content-type"] == "image/jpeg")
    let part = try server.curl(path, ["-H", Self.acme, "-H", "Range: bytes=10-19"])
    #expect(part.status == 206)
    #expect(part.headers["content-range"] == "bytes 10-19/\(size)")
    #expect(part.body == whole.body[whole.body.startIndex + 10..<whole.body.startIndex + 20])
    let suffix = try server.curl(path, ["-H", Self.acme, "-H", "Range: bytes=-5"])
    #expect(suffix.status == 206 && suffix.body == whole.body.suffix(5))
    let open = try server.curl(path, ["-H", Self.acme, "-H", "Range: bytes=\(size - 3)-"])
    #expect(open.status == 206 && open.body.count == 3)
    let beyond = try server.curl(path, ["-H", Self.acme, "-H", "Range: bytes=\(size)-"])
    #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */\(size)")
    let several = try server.curl(path, ["-H", Self.acme, "-H", "Range: bytes=0-1,5-6"])
    #expect(several.status == 200 && several.body.count == size)
    let cached = try server.curl(path, ["-H", Self.acme, "-H", "If-None-Match: \(etag)"])
    #expect(cached.status == 304 && cached.body.isEmpty && cached.headers["etag"] == etag)
    let head = try server.curl(path, ["-I", "-H", Self.acme])
    #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == String(size))
    let meta = try server.curl(path + "/meta", ["-H", Self.acme])
    #expect(
      meta.json?["id"] as? String == id && meta.json?["sha256"] as? String == record["sha256"] as? String)
    #expect(try server.curl(path, ["-X", "DELETE", "-H", Self.acme]).status == 204)
    #expect(try server.curl(path, ["-H", Self.acme]).status == 404)
    #expect(try server.curl(path + "/meta", ["-H", Self.acme]).status == 404)
    #expect(try server.curl(path, ["-X", "DELETE", "-H", Self.acme]).status == 404)
  }

  @Test func anIdempotencyKeyReplaysTheFirstAnswerAndRefusesAnotherBody() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let first = try server.upload(file: Self.file, headers: ["Idempotency-Key: order-1"])
    #expect(first.status == 201)
    let again = try server.upload(file: Self.file, headers: ["Idempotency-Key: order-1"])
    #expect(again.status == 201)
    #expect(again.body == first.body)
    #expect(again.headers["location"] == first.headers["location"])
    #expect(again.headers["idempotent-replayed"] == "true")
    let other = try server.upload(
      file: UploadClientTests.corpusPath("jpeg-orient-2.jpg"), headers: ["Idempotency-Key: order-1"])
    #expect(other.status == 422 && other.code == "idempotency_mismatch")
    let betaSame = try server.upload(
      file: Self.file, key: AttachmentServer.betaKey, headers: ["Idempotency-Key: order-1"])
    #expect(betaSame.status == 201 && betaSame.body != first.body)
  }

  @Test func anIdempotentRetryWhileTheFirstBodyIsStillArrivingGets409() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    // The first request sends half its chunked body, waits, then the rest.
    let script = """
      import socket, sys, time
      port, key, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
      body = open(path, 'rb').read(); half = len(body) // 2
      s = socket.create_connection(('127.0.0.1', port))
      s.sendall(('POST /v1/attachments HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer ' + key +
                 '\\r\\nIdempotency-Key: slow-1\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n').encode())
      s.sendall(b'%x\\r\\n' % half + body[:half] + b'\\r\\n')
      time.sleep(5)
      s.sendall(b'%x\\r\\n' % (len(body) - half) + body[half:] + b'\\r\\n0\\r\\n\\r\\n')
      reply = b''
      while b'\\r\\n\\r\\n' not in reply: reply += s.recv(65536)
      print(reply.split(b' ')[1].decode())
      """
    let port = String(server.base.split(separator: ":").last!)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script, port, AttachmentServer.acmeKey, Self.file]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let service = server.app.attachments
    #expect(LiveTesting.waitUntil(seconds: 10) { service.metrics.uploadsInFlight.current == 1 })
    let during = try server.upload(file: Self.file, headers: ["Idempotency-Key: slow-1"])
    #expect(during.status == 409 && during.code == "idempotency_in_progress")
    process.waitUntilExit()
    let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(status.trimmingCharacters(in: .whitespacesAndNewlines) == "201")
    let after = try server.upload(file: Self.file, headers: ["Idempotency-Key: slow-1"])
    #expect(after.status == 201 && after.headers["idempotent-replayed"] == "true")
  }

  @Test func metricsAndReadinessReportTheService() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    #expect(try server.upload(file: Self.file).status == 201)
    #expect(try server.curl("/v1/attachments", ["--data-binary", "hello", "-H", Self.acme]).status == 415)
    let ready = try server.curl("/readyz", [])
    #expect(ready.status == 200)
    let metrics = try server.curl("/metrics", [])
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
