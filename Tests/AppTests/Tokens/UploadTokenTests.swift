import AttachdTesting
import Foundation
import HTTP
import TestSupport
import Testing

@testable import App

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Phones with per-user upload tokens minted by a PyJWT backend: uploads through the test
/// client (in-process), curl and URLSession (live), ownership, and every refusal with its own
/// code.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct UploadTokenTests {
  static func server(_ backend: TokenBackend, configure: (inout Application.Configuration) -> Void = { _ in })
    throws -> AttachmentServer
  {
    try AttachmentServer { config in
      config.auth.tokens.keys = backend.tokenKeys
      configure(&config)
    }
  }

  static func bearer(_ token: String) -> String { "Authorization: Bearer \(token)" }

  static func auth(_ token: String) -> HTTPHeaders { AttachmentServer.auth(token) }

  /// A problem body without its per-request `instance`.
  static func shape(_ reply: TestResponse) -> [String: String] {
    var json = (reply.json ?? [:]).compactMapValues { "\($0)" }
    json["instance"] = nil
    return json
  }

  @Test func aPhoneUploadsWithItsTokenAndOnlyItsUserSeesTheAttachment() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory)
    let tokens = try backend.mint([TokenBackend.acme("alice"), TokenBackend.acme("bob")])
    let (alice, bob) = (Self.auth(tokens[0]), Self.auth(tokens[1]))
    let client = server.client

    let uploaded = try server.post(file: image, key: tokens[0])
    #expect(uploaded.status == 201)
    let id = try #require(uploaded.json?["id"] as? String)
    #expect(uploaded.json?["owner"] as? String == "alice")
    let path = "/v1/attachments/\(id)"
    #expect(try client.execute("GET", path, headers: alice).status == 200)
    #expect(try client.execute("GET", path + "/meta", headers: alice).json?["owner"] as? String == "alice")

    // Bob, of the same tenant, gets exactly what a missing id gets, for GET, meta and DELETE.
    let missing = "/v1/attachments/att_00000000000000000000000000"
    for (route, method) in [("", "GET"), ("/meta", "GET"), ("", "DELETE")] {
      let other = try client.execute(method, path + route, headers: bob)
      let none = try client.execute(method, missing + route, headers: bob)
      #expect(other.status == 404, "\(method) \(route)")
      #expect(Self.shape(other) == Self.shape(none))
      #expect(other["content-length"] == none["content-length"])
    }
    // The tenant's key sees the whole tenant; another tenant sees nothing.
    #expect(
      try client.execute("GET", path, headers: AttachmentServer.auth(AttachmentServer.acmeKey)).status == 200)
    #expect(
      try client.execute("GET", path, headers: AttachmentServer.auth(AttachmentServer.betaKey)).status == 404)
    // The signed link keeps working with no credential at all.
    let link = try #require(uploaded.json?["signed_url"] as? String)
    #expect(try client.execute("GET", link).status == 200)
    // A key upload has no owner, so no token user sees it.
    let keyed = try server.post(file: image)
    let keyedID = try #require(keyed.json?["id"] as? String)
    #expect(keyed.json?["owner"] is NSNull)
    #expect(try client.execute("GET", "/v1/attachments/\(keyedID)", headers: alice).status == 404)

    #expect(try client.execute("DELETE", path, headers: alice).status == 204)
    #expect(try client.execute("GET", path, headers: alice).status == 404)
  }

  @Test func anHS256TokenOfAnotherTenantWorksForItsOwnTenantOnly() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory)
    let tokens = try backend.mint([
      TokenBackend.Spec(
        alg: "HS256", key: "hs",
        claims: ["iss": "gamma-backend", "sub": "carol", "scope": "upload read", "iat": 0, "exp": 300])
    ])
    let carol = Self.auth(tokens[0])
    let uploaded = try server.post(file: image, key: tokens[0])
    #expect(uploaded.status == 201)
    let id = try #require(uploaded.json?["id"] as? String)
    #expect(try server.client.execute("GET", "/v1/attachments/\(id)", headers: carol).status == 200)
    #expect(
      try server.client.execute(
        "GET", "/v1/attachments/\(id)", headers: AttachmentServer.auth(AttachmentServer.acmeKey)
      ).status == 404)
  }

  @Test func eachBadTokenIsRefusedWithItsOwnCodeBeforeTheBodyIsRead() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory)
    var otherTenantKid = TokenBackend.acme("mallory")
    otherTenantKid.headers["kid"] = "beta-1"
    var signedByBeta = TokenBackend.acme("mallory")
    signedByBeta.key = "other"
    var unsigned = TokenBackend.acme("mallory")
    unsigned.alg = "none"
    let tokens = try backend.mint([
      TokenBackend.acme("alice"),
      unsigned,
      TokenBackend.acme("alice", extra: ["iat": -1200, "exp": -300]),
      TokenBackend.acme("alice", extra: ["nbf": 300]),
      TokenBackend.acme("alice", extra: ["iat": 600, "exp": 900]),
      otherTenantKid,
      signedByBeta,
      TokenBackend.acme("alice", scope: "read"),
      TokenBackend.acme("alice", extra: ["exp": 7200]),
    ])
    var tampered = Array(tokens[0].utf8)
    let at = tampered.count - 5
    tampered[at] = tampered[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
    let cases: [(String, Int, String)] = [
      (String(decoding: tampered, as: UTF8.self), 401, "token_signature_invalid"),
      (tokens[1], 401, "token_alg_none"),
      (tokens[2], 401, "token_expired"),
      (tokens[3], 401, "token_not_yet_valid"),
      (tokens[4], 401, "token_clock_skew"),
      (tokens[5], 401, "token_key_mismatch"),
      (tokens[6], 401, "token_signature_invalid"),
      (tokens[7], 403, "token_insufficient_scope"),
      (tokens[8], 401, "token_lifetime_too_long"),
      ("eyJhbGciOiJSUzI1NiJ9.e30.AA", 401, "token_alg_unsupported"),
      ("not.a.token", 401, "token_malformed"),
    ]
    for (token, status, code) in cases {
      // With Expect: 100-continue, a refusal on the head means curl never sends the body.
      let (_, written) = try LiveTesting.run(
        "/usr/bin/curl",
        [
          "-s", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}", "--data-binary", "@" + image, "-H",
          "Expect: 100-continue", "--expect100-timeout", "10", "-H", Self.bearer(token),
          server.base + "/v1/attachments",
        ], timeout: 20)
      #expect(String(decoding: written, as: UTF8.self) == "\(status) 0", "\(code)")
      let reply = try server.post(file: image, key: token)
      #expect(reply.status == status && reply.code == code, "expected \(code), got \(reply.code ?? "-")")
      let challenge = reply["www-authenticate"]
      if status == 401 {
        #expect(challenge == #"Bearer error="invalid_token""#)
      } else {
        #expect(challenge == #"Bearer error="insufficient_scope", scope="upload""#)
      }
    }
    #expect(try server.app.attachments.store.statistics().attachments == 0)
  }

  @Test func maxFilesAndMaxBytesBoundOneJtiAndFailedImagesDoNotCount() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory)
    let size = try #require(try FileManager.default.attributesOfItem(atPath: image)[.size] as? Int)
    let notAnImage = backend.directory + "/notes.txt"
    try Data("not an image".utf8).write(to: URL(fileURLWithPath: notAnImage))
    let tokens = try backend.mint([
      TokenBackend.acme("alice", extra: ["jti": "t-files", "max_files": 2]),
      TokenBackend.acme("alice", extra: ["jti": "t-bytes", "max_bytes": .int(size * 2 - 1)]),
      TokenBackend.acme("alice", extra: ["jti": "t-tiny", "max_bytes": 100]),
    ])
    let files = tokens[0]
    #expect(try server.post(file: notAnImage, key: files).status == 415)
    #expect(try server.post(file: image, key: files).status == 201)
    #expect(try server.post(file: image, key: files).status == 201)
    let third = try server.post(file: image, key: files)
    #expect(third.status == 403 && third.code == "token_max_files")
    // A multipart upload of two parts counts two files and their bytes.
    let bytes = tokens[1]
    var form = MultipartForm()
    let png = [UInt8](try Data(contentsOf: URL(fileURLWithPath: image)))
    form.addFile("a", filename: "a.png", png, contentType: "image/png")
    form.addFile("b", filename: "b.png", png, contentType: "image/png")
    let two = try server.client.execute(
      "POST", "/v1/attachments", headers: Self.auth(bytes) + ["Content-Type": form.contentType],
      body: .bytes(form.body))
    #expect(two.status == 403 && two.code == "token_max_bytes")
    #expect(try server.post(file: image, key: bytes).status == 201)
    let second = try server.post(file: image, key: bytes)
    #expect(second.status == 403 && second.code == "token_max_bytes")
    // A body larger than the whole allowance is refused on its Content-Length, and chunked as it arrives.
    let tiny = tokens[2]
    let declared = try server.post(file: image, key: tiny)
    #expect(declared.status == 403 && declared.code == "token_max_bytes")
    let chunked = try server.post(file: image, key: tiny, chunked: true)
    #expect(chunked.status == 403 && chunked.code == "token_max_bytes")
    #expect(try server.app.attachments.store.statistics().attachments == 3)
  }

  @Test func aUsersDailyQuotaAnswers429UntilTheDayEnds() throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend) { $0.limits.userQuota.dailyFiles = 2 }
    defer { server.stop() }
    let image = try TokenBackend.smallPNG(in: backend.directory)
    let tokens = try backend.mint([TokenBackend.acme("alice"), TokenBackend.acme("bob")])
    for _ in 0..<2 {
      #expect(try server.post(file: image, key: tokens[0]).status == 201)
    }
    let over = try server.post(file: image, key: tokens[0])
    #expect(over.status == 429 && over.code == "daily_quota_files")
    let retry = try #require(Int(over["retry-after"] ?? ""))
    #expect((1...86_400).contains(retry))
    #expect(try server.post(file: image, key: tokens[1]).status == 201)
    // Tenant keys are not counted per user.
    for _ in 0..<3 {
      let reply = try server.post(file: image, key: AttachmentServer.acmeKey)
      #expect(reply.status == 201)
    }
  }

  @Test func urlSessionUploadsWithATokenAndAnotherUserGets404() async throws {
    let backend = try TokenBackend()
    let server = try Self.server(backend)
    defer { server.stop() }
    let tokens = try backend.mint([TokenBackend.acme("alice"), TokenBackend.acme("bob")])
    let image = try Data(contentsOf: URL(fileURLWithPath: try TokenBackend.smallPNG(in: backend.directory)))
    var request = URLRequest(url: URL(string: server.base + "/v1/attachments")!)
    request.httpMethod = "POST"
    request.setValue("Bearer \(tokens[0])", forHTTPHeaderField: "Authorization")
    request.setValue("image/png", forHTTPHeaderField: "Content-Type")
    let (data, response) = try await URLSession.shared.upload(for: request, from: image)
    #expect((response as? HTTPURLResponse)?.statusCode == 201)
    let record = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let id = try #require(record["id"] as? String)
    for (token, expected) in [(tokens[0], 200), (tokens[1], 404)] {
      var get = URLRequest(url: URL(string: server.base + "/v1/attachments/\(id)")!)
      get.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
      let (_, reply) = try await URLSession.shared.data(for: get)
      #expect((reply as? HTTPURLResponse)?.statusCode == expected)
    }
    var expired = request
    let old = try backend.mint([TokenBackend.acme("alice", extra: ["iat": -900, "exp": -120])])
    expired.setValue("Bearer \(old[0])", forHTTPHeaderField: "Authorization")
    let (body, refused) = try await URLSession.shared.upload(for: expired, from: image)
    #expect((refused as? HTTPURLResponse)?.statusCode == 401)
    #expect(
      (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["code"] as? String == "token_expired")
  }

  @Test func idempotencyKeysArePerUserAndNoLogLineHoldsATokenItsUserOrASecret() throws {
    let backend = try TokenBackend()
    let accessPath = backend.directory + "/access.log"
    let eventPath = backend.directory + "/events.log"
    let accessLog = AccessLog(sink: try LogSink(appendingTo: accessPath))
    let eventLog = EventLog(sink: try LogSink(appendingTo: eventPath))
    let server = try AttachmentServer(accessLog: accessLog, eventLog: eventLog) {
      $0.auth.tokens.keys = backend.tokenKeys
    }
    let image = try TokenBackend.smallPNG(in: backend.directory)
    let tokens = try backend.mint([
      TokenBackend.acme("alice@example.com"), TokenBackend.acme("bob@example.com"),
      TokenBackend.acme("alice@example.com", extra: ["iat": -900, "exp": -120]),
      TokenBackend.Spec(
        alg: "HS256", key: "hs",
        claims: ["iss": "gamma-backend", "sub": "carol@example.com", "scope": "upload", "iat": 0, "exp": 300]),
    ])
    let key: HTTPHeaders = ["Idempotency-Key": "photo-1"]
    let alice = try server.post(file: image, key: tokens[0], headers: key)
    let bob = try server.post(file: image, key: tokens[1], headers: key)
    let again = try server.post(file: image, key: tokens[0], headers: key)
    #expect(alice.status == 201 && bob.status == 201 && again.status == 201)
    #expect(bob["idempotent-replayed"] == nil && bob.json?["owner"] as? String == "bob@example.com")
    #expect(bob.json?["id"] as? String != alice.json?["id"] as? String)
    #expect(again["idempotent-replayed"] == "true" && again.body == alice.body)
    #expect(try server.post(file: image, key: tokens[2]).status == 401)
    #expect(try server.post(file: image, key: tokens[3]).status == 201)
    #expect(
      try server.client.execute(
        "POST", "/v1/attachments", headers: Self.auth(tokens[0]), body: .bytes(Array("not an image".utf8))
      ).status == 415)
    server.stop()
    accessLog.flush()
    eventLog.flush()
    let logs =
      (try String(contentsOfFile: accessPath, encoding: .utf8))
      + (try String(contentsOfFile: eventPath, encoding: .utf8))
    #expect(logs.split(separator: "\n").count >= 6)
    let claimSegments = tokens.map { String($0.split(separator: ".")[1]) }
    let users = ["alice@example.com", "bob@example.com", "carol@example.com"]
    for secret in tokens + claimSegments + users + [backend.secret] {
      #expect(!logs.contains(secret))
    }
  }
}
