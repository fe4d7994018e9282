import Crypto
import Testing

@testable import App

@Suite struct SignedURLTests {
  static let secret = Array("0123456789abcdef0123456789abcdef".utf8)
  let signer = SignedURL(secret: Self.secret, ttlSeconds: 3600)
  let id = "att_01HZY3C8XK6W9T5V2Q7R4M1N0P"
  let now = 1_800_000_000

  func query(of path: String) -> String {
    String(path[path.index(after: path.firstIndex(of: "?")!)...])
  }

  @Test func theLinkIsThePathWithExpiryAndTheHMACOfVersionIdExpiryAndTenant() throws {
    let path = signer.make(id: id, tenant: "acme", expiresAt: 1_800_003_600)
    let mac = HMACSHA256.authenticate("v1\n\(id)\n1800003600\nacme", key: Self.secret)
    #expect(path == "/v1/attachments/\(id)?exp=1800003600&sig=\(Base64URL.encode(mac))")
    #expect(!path.contains("acme"))
  }

  @Test func aFreshLinkVerifiesUntilItExpires() {
    let (path, expiresAt) = signer.make(id: id, tenant: "acme", now: now)
    #expect(expiresAt == now + 3600)
    let q = query(of: path)
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: now) == .valid)
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: expiresAt - 1) == .valid)
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: expiresAt) == .expired)
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: expiresAt + 86_400) == .expired)
  }

  @Test func aLinkForAnotherTenantsIdOrAnUnknownIdIsInvalid() {
    let q = query(of: signer.make(id: id, tenant: "acme", expiresAt: now + 60))
    #expect(signer.verify(id: id, query: q, tenantOfID: "evil", now: now) == .invalid)
    #expect(signer.verify(id: id, query: q, tenantOfID: nil, now: now) == .invalid)
    #expect(
      signer.verify(id: "att_01HZY3C8XK6W9T5V2Q7R4M1N0Q", query: q, tenantOfID: "acme", now: now) == .invalid)
  }

  @Test func aChangedExpiryIsInvalidNotExpired() {
    let q = query(of: signer.make(id: id, tenant: "acme", expiresAt: now - 10))
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: now) == .expired)
    let extended = q.replacingOccurrences(of: "exp=\(now - 10)", with: "exp=\(now + 3600)")
    #expect(signer.verify(id: id, query: extended, tenantOfID: "acme", now: now) == .invalid)
    let padded = q.replacingOccurrences(of: "exp=", with: "exp=0")
    #expect(signer.verify(id: id, query: padded, tenantOfID: "acme", now: now) == .invalid)
  }

  @Test func everySingleCharacterChangeOfTheSignatureIsInvalid() throws {
    let q = query(of: signer.make(id: id, tenant: "acme", expiresAt: now + 60))
    let sig = String(q[q.range(of: "sig=")!.upperBound...])
    for position in sig.indices {
      for replacement in ["A", "z", "-"] where String(sig[position]) != replacement {
        var tampered = sig
        tampered.replaceSubrange(position...position, with: replacement)
        let result = signer.verify(
          id: id, query: "exp=\(now + 60)&sig=\(tampered)", tenantOfID: "acme", now: now)
        #expect(result == .invalid, "sig changed at \(sig.distance(from: sig.startIndex, to: position))")
      }
    }
  }

  @Test func aLinkMadeWithAnotherSecretIsInvalid() {
    let other = SignedURL(secret: Array("another-secret-another-secret-xx".utf8))
    let q = query(of: other.make(id: id, tenant: "acme", expiresAt: now + 60))
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: now) == .invalid)
  }

  @Test(
    arguments: [
      nil, "", "exp=1800000060", "sig=AAAA", "exp=&sig=", "exp=abc&sig=SIG", "exp=-5&sig=SIG",
      "exp=1800000060&sig=SIG&sig=SIG", "exp=1800000060&exp=1800000060&sig=SIG", "exp=1800000060&sig=SIG=",
      "exp=1800000060&sig=SIGA", "exp=1800000060&sig=" + String(repeating: "A", count: 43),
      "exp=1800000060000000&sig=SIG",
    ] as [String?])
  func malformedQueriesAreInvalid(template: String?) {
    let good = query(of: signer.make(id: id, tenant: "acme", expiresAt: 1_800_000_060))
    let sig = String(good[good.range(of: "sig=")!.upperBound...])
    let q = template?.replacingOccurrences(of: "SIG", with: sig)
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: now) == .invalid)
  }

  @Test func parameterOrderAndExtraParametersDoNotMatter() {
    let q = query(of: signer.make(id: id, tenant: "acme", expiresAt: now + 60))
    let parts = q.split(separator: "&").map(String.init)
    #expect(signer.verify(id: id, query: "\(parts[1])&\(parts[0])", tenantOfID: "acme", now: now) == .valid)
    #expect(signer.verify(id: id, query: "download=1&\(q)", tenantOfID: "acme", now: now) == .valid)
    #expect(SignedURL.isSigned(query: q))
    #expect(!SignedURL.isSigned(query: "download=1"))
    #expect(!SignedURL.isSigned(query: nil))
  }

  @Test(arguments: ["", "a\nb", "a/b", "a?b", "a&b", "a b"])
  func idsThatCannotBeSignedUnambiguouslyAreInvalid(badID: String) {
    let q = query(of: signer.make(id: badID, tenant: "acme", expiresAt: now + 60))
    #expect(signer.verify(id: badID, query: q, tenantOfID: "acme", now: now) == .invalid)
  }

  @Test func aConfiguredSecretIsUsedAndNoWarningIsGiven() {
    var warnings: [String] = []
    let configured = SignedURL(
      configuration: .init(secret: "0123456789abcdef0123456789abcdef", ttlSeconds: 60),
      warn: { warnings.append($0) })
    #expect(warnings.isEmpty)
    #expect(configured.ttlSeconds == 60)
    let q = query(of: configured.make(id: id, tenant: "acme", expiresAt: now + 60))
    #expect(signer.verify(id: id, query: q, tenantOfID: "acme", now: now) == .valid)
    #expect(!"\(configured)".contains("0123456789abcdef"))
  }

  @Test func withoutASecretEachProcessGetsARandomOneAndAWarning() {
    var warnings: [String] = []
    let first = SignedURL(configuration: .init(), warn: { warnings.append($0) })
    let second = SignedURL(configuration: .init(), warn: { warnings.append($0) })
    #expect(warnings.count == 2)
    #expect(warnings[0].contains("ATTACHD_SIGNING_SECRET"))
    let q = query(of: first.make(id: id, tenant: "acme", expiresAt: now + 60))
    #expect(first.verify(id: id, query: q, tenantOfID: "acme", now: now) == .valid)
    #expect(second.verify(id: id, query: q, tenantOfID: "acme", now: now) == .invalid)
  }

  @Test func settingsAreValidated() throws {
    try SignedURL.Configuration().validate()
    #expect(throws: ConfigurationError.self) { try SignedURL.Configuration(secret: "short").validate() }
    #expect(throws: ConfigurationError.self) { try SignedURL.Configuration(ttlSeconds: 0).validate() }
    #expect(throws: ConfigurationError.self) {
      try SignedURL.Configuration(ttlSeconds: 31 * 86_400).validate()
    }
  }
}
