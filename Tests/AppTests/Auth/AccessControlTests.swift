import HTTP
import Testing

@testable import App

@Suite struct AccessControlTests {
  static let readKey = "ak_readonly-key-0123456789abcdefgh"
  static let uploadKey = "ak_uploader-key-0123456789abcdefgh"

  let clock = ManualClock()
  let access: AccessControl

  init() {
    var configuration = AccessControl.Configuration()
    configuration.auth.keys = [
      HashedKey(tenant: "acme", scopes: [.read], key: Self.readKey),
      HashedKey(tenant: "acme", scopes: [.upload, .read], key: Self.uploadKey),
    ]
    configuration.rateLimit = .init(requestsPerSecond: 1, burst: 2)
    configuration.uploads = .init(maxConcurrentUploadsPerKey: 1, retryAfterSeconds: 2)
    configuration.signedLinks = .init(secret: String(repeating: "s", count: 32), ttlSeconds: 60)
    access = AccessControl(configuration: configuration, clock: clock.clock, warn: { _ in })
  }

  @Test func theChecksRunInOrderKeyScopeRate() {
    #expect(access.authorize(authorizationHeader: nil, scope: .read) == .failure(.missingKey))
    #expect(
      access.authorize(authorizationHeader: "Bearer nope-nope-nope-nope", scope: .read)
        == .failure(.invalidKey))
    #expect(
      access.authorize(authorizationHeader: "Bearer \(Self.readKey)", scope: .upload)
        == .failure(.missingScope(.upload)))
    // The refused request took no token: the burst of two is still there.
    #expect(access.authorize(authorizationHeader: "Bearer \(Self.readKey)", scope: .read).isSuccess)
    #expect(access.authorize(authorizationHeader: "Bearer \(Self.readKey)", scope: .read).isSuccess)
    #expect(
      access.authorize(authorizationHeader: "Bearer \(Self.readKey)", scope: .read)
        == .failure(.rateLimited(retryAfterSeconds: 1)))
    // Buckets are per key.
    #expect(access.authorize(authorizationHeader: "Bearer \(Self.uploadKey)", scope: .read).isSuccess)
  }

  @Test func twoAuthorizationFieldsAreRefused() {
    let head = HTTPRequestHead(
      method: "GET", target: "/v1/attachments/x", version: .http1_1,
      headers: HTTPHeaders([
        ("Authorization", "Bearer \(Self.readKey)"), ("authorization", "Bearer \(Self.uploadKey)"),
      ]))
    #expect(access.authorize(head, scope: .read) == .failure(.invalidKey))
    let single = HTTPRequestHead(
      method: "GET", target: "/v1/attachments/x", version: .http1_1,
      headers: HTTPHeaders([("authorization", "bearer \(Self.readKey)")]))
    #expect(access.authorize(single, scope: .read).isSuccess)
  }

  @Test func theUploadCapIsPerKeyAndReleasedWhenAnUploadEnds() throws {
    let principal = try access.authorize(authorizationHeader: "Bearer \(Self.uploadKey)", scope: .upload)
      .get()
    #expect(access.beginUpload(for: principal).isSuccess)
    #expect(access.beginUpload(for: principal).failure == .tooManyConcurrentUploads(retryAfterSeconds: 2))
    access.endUpload(for: principal)
    #expect(access.beginUpload(for: principal).isSuccess)
  }

  @Test func signedLinksMapToTheirErrors() {
    let id = "att_01HZY3C8XK6W9T5V2Q7R4M1N0P"
    let path = access.signer.make(id: id, tenant: "acme", expiresAt: 2000)
    let query = String(path.split(separator: "?")[1])
    #expect(access.verifySignedLink(id: id, query: query, tenantOfID: "acme", now: 1999).isSuccess)
    #expect(
      access.verifySignedLink(id: id, query: query, tenantOfID: "acme", now: 2000).failure
        == .signedLinkExpired)
    #expect(
      access.verifySignedLink(id: id, query: query, tenantOfID: "other", now: 1999).failure
        == .signedLinkInvalid)
  }

  @Test(
    arguments: [
      (AccessError.missingKey, 401, "unauthorized", "WWW-Authenticate", "Bearer"),
      (.invalidKey, 401, "unauthorized", "WWW-Authenticate", #"Bearer error="invalid_token""#),
      (.missingScope(.delete), 403, "forbidden", nil, nil),
      (.rateLimited(retryAfterSeconds: 7), 429, "rate_limited", "Retry-After", "7"),
      (.tooManyConcurrentUploads(retryAfterSeconds: 1), 429, "too_many_uploads", "Retry-After", "1"),
      (.signedLinkInvalid, 403, "signed_link_invalid", nil, nil),
      (.signedLinkExpired, 403, "signed_link_expired", nil, nil),
    ] as [(AccessError, Int, String, String?, String?)])
  func everyRefusalHasItsStatusCodeAndHeader(
    error: AccessError, status: Int, code: String, header: String?, value: String?
  ) {
    let entry = error.publicError
    #expect(entry.status == status)
    #expect(entry.code == code)
    if let header {
      #expect(entry.headers.first(name: header) == value)
    } else {
      #expect(entry.headers.count == 0)
    }
  }

  @Test func theDefaultConfigurationIsValid() throws {
    try AccessControl.Configuration().validate()
  }
}

extension Result {
  var isSuccess: Bool {
    if case .success = self { return true }
    return false
  }

  var failure: Failure? {
    if case .failure(let error) = self { return error }
    return nil
  }
}
