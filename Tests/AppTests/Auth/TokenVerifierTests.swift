import Crypto
import Testing

@testable import App

/// The upload-token verifier on exact token strings: RFC 7515's HS256 example, tokens minted
/// here, and hand-built ones for every refusal.
@Suite struct TokenVerifierTests {
  static let now = 1_800_000_000
  static let acmeKey = Ed25519PrivateKey(raw: [UInt8](repeating: 7, count: 32))!
  static let acmeNextKey = Ed25519PrivateKey(raw: [UInt8](repeating: 8, count: 32))!
  static let betaSecret = Array("beta-hs256-secret-0123456789abcdef-0123".utf8)

  static let configuration = TokenVerifier.Configuration(keys: [
    TokenKey(tenant: "acme", issuer: "acme-backend", algorithm: .edDSA, publicKeyPEM: acmeKey.publicKey.pem),
    TokenKey(
      tenant: "acme", issuer: "acme-backend", keyID: "acme-2027", algorithm: .edDSA,
      publicKeyPEM: acmeNextKey.publicKey.pem),
    TokenKey(
      tenant: "beta", issuer: "beta-backend", keyID: "beta-1", algorithm: .hs256,
      secretSource: .environment("BETA_SECRET"), secret: betaSecret),
  ])
  let verifier = TokenVerifier(configuration: Self.configuration)

  static func claims(
    issuer: String = "acme-backend", subject: String = "user-1", scopes: [Scope] = [.upload],
    lifetime: Int = 600,
    issuedAt: Int = now
  ) -> TokenMinter.Claims {
    TokenMinter.Claims(
      issuer: issuer, subject: subject, scopes: scopes, issuedAt: issuedAt, lifetime: lifetime)
  }

  static func acme(_ claims: TokenMinter.Claims = claims(), keyID: String? = nil) -> String {
    TokenMinter.mint(claims, signer: .edDSA(acmeKey), keyID: keyID)
  }

  /// A token from literal header and claims JSON, signed with acme's key (or `signature`).
  static func handMade(_ header: String, _ claims: String, signature: String? = nil) -> String {
    let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
    return input + "." + (signature ?? Base64URL.encode(acmeKey.sign(Array(input.utf8))))
  }

  func refusal(_ token: String, now: Int = now) -> TokenError? {
    if case .failure(let error) = verifier.verify(token, now: now) { return error }
    return nil
  }

  // MARK: - Accepted

  @Test func aMintedEdDSATokenSpeaksForItsUserOfItsIssuersTenant() throws {
    var claims = Self.claims(scopes: [.upload, .read])
    claims.jti = "j-1"
    claims.maxFiles = 3
    claims.maxBytes = 5_000_000
    let principal = try verifier.verify(Self.acme(claims), now: Self.now).get()
    #expect(principal.tenant == "acme")
    #expect(principal.user == "user-1")
    #expect(principal.scopes == [.upload, .read])
    #expect(
      principal.token == TokenGrant(jti: "j-1", maxFiles: 3, maxBytes: 5_000_000, expiresAt: Self.now + 600))
    #expect(principal.keyID.hasPrefix("t_") && principal.keyID.utf8.count == 10)
    #expect(principal.limitKey == "u\nacme\nuser-1")
    #expect(principal.viewer == .user("user-1"))
  }

  @Test func aRotatedKeyIsFoundByKidOrByTryingTheIssuersKeys() throws {
    let next = TokenMinter.mint(Self.claims(), signer: .edDSA(Self.acmeNextKey), keyID: "acme-2027")
    #expect(try verifier.verify(next, now: Self.now).get().tenant == "acme")
    let noKid = TokenMinter.mint(Self.claims(), signer: .edDSA(Self.acmeNextKey))
    #expect(try verifier.verify(noKid, now: Self.now).get().tenant == "acme")
  }

  @Test func anHS256TokenVerifiesWithItsTenantSecret() throws {
    let token = TokenMinter.mint(
      Self.claims(issuer: "beta-backend"), signer: .hs256(Self.betaSecret), keyID: "beta-1")
    let principal = try verifier.verify(token, now: Self.now).get()
    #expect(principal.tenant == "beta")
    #expect(principal.user == "user-1")
  }

  @Test func theRFC7515HS256ExamplePassesItsSignatureAndStopsAtTheMissingSubject() {
    // RFC 7515 Appendix A.1: the JWK's k, and the JWS exactly as printed (CR LF inside the JSON).
    let key = Base64URL.decode(
      "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")!
    let token =
      "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9"
      + ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
      + ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    let verifier = TokenVerifier(
      configuration: .init(keys: [
        TokenKey(
          tenant: "joe", issuer: "joe", algorithm: .hs256, secretSource: .environment("K"), secret: key)
      ]))
    let before = 1_300_819_000
    #expect(verifier.verify(token, now: before).failure == .claimsInvalid)
    var tampered = Array(token.utf8)
    tampered[tampered.count - 2] = UInt8(ascii: tampered[tampered.count - 2] == UInt8(ascii: "X") ? "Y" : "X")
    #expect(
      verifier.verify(String(decoding: tampered, as: UTF8.self), now: before).failure == .signatureInvalid)
  }

  // MARK: - Refused before the signature

  @Test(arguments: [
    "", "a.b", "a.b.c.d", "....", "eyJ.eyJ.sig", "not-base64!.e30.AA",
    // Padding, standard base64 characters and a trailing stray bit are not base64url.
    "eyJhbGciOiJFZERTQSJ9=.e30.AA", "eyJhbGciOiJFZERTQSJ9+.e30.AA",
  ])
  func aTokenThatIsNotThreeBase64URLSegmentsOfJSONIsMalformed(token: String) {
    #expect(refusal(token) == .malformed)
  }

  @Test(arguments: [
    #"{"alg":"EdDSA","alg":"none"}"#,  // a repeated header member
    #"{"alg":"EdDSA"} "#.replacingOccurrences(of: " ", with: "x"),  // trailing bytes
    #"{"alg":"EdDSA","typ":"JWS"}"#, #"{"alg":"EdDSA","crit":["exp"]}"#, #"{"alg":"EdDSA","kid":7}"#,
    #"{"alg":7}"#, #"["EdDSA"]"#, #"{"alg":"EdDSA","x":"\ud800"}"#, #"{"alg":"EdDSA","x":01}"#,
    "{\"alg\":\"EdDSA\",\"x\":\"\u{01}\"}",
  ])
  func aStrictlyInvalidHeaderIsMalformed(header: String) {
    let token = Self.handMade(header, #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload"}"#)
    #expect(refusal(token) == .malformed)
  }

  @Test func repeatedClaimsAreMalformedToo() {
    let token = Self.handMade(
      #"{"alg":"EdDSA"}"#,
      #"{"iss":"acme-backend","sub":"u","sub":"admin","exp":1800000600,"scope":"upload"}"#)
    #expect(refusal(token) == .malformed)
  }

  @Test(arguments: ["none", "None", "NONE", "nOnE"])
  func anUnsignedTokenIsRefusedAsAlgNoneInAnySpelling(alg: String) {
    let claims = #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload"}"#
    #expect(refusal(Self.handMade(#"{"alg":"\#(alg)"}"#, claims, signature: "")) == .algorithmNone)
    #expect(refusal(Self.handMade(#"{"alg":"\#(alg)"}"#, claims)) == .algorithmNone)
  }

  @Test(arguments: ["RS256", "ES256", "HS512", "PS256", "EdDSA ", "hs256", ""])
  func anAlgorithmAttachdDoesNotVerifyIsUnsupported(alg: String) {
    let token = Self.handMade(
      #"{"alg":"\#(alg)"}"#, #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload"}"#)
    #expect(refusal(token) == .algorithmUnsupported)
  }

  @Test func anHS256TokenMacedWithAnEdDSAIssuersPublicKeyIsAnAlgorithmMismatch() {
    // The classic confusion attack: the public key text used as an HMAC secret.
    let forged = TokenMinter.mint(Self.claims(), signer: .hs256(Array(Self.acmeKey.publicKey.pem.utf8)))
    #expect(refusal(forged) == .algorithmMismatch)
  }

  @Test func anUnknownIssuerOrKidIsRefused() {
    #expect(refusal(Self.acme(Self.claims(issuer: "evil-backend"))) == .issuerUnknown)
    #expect(refusal(Self.acme(keyID: "no-such-kid")) == .issuerUnknown)
  }

  @Test func aKidOfAnotherTenantsKeyIsAKeyMismatch() {
    // acme's backend names beta's key id while claiming acme's issuer, and the other way round.
    #expect(refusal(Self.acme(keyID: "beta-1")) == .keyMismatch)
    let asBeta = TokenMinter.mint(
      Self.claims(issuer: "beta-backend"), signer: .hs256(Self.betaSecret), keyID: "acme-2027")
    #expect(refusal(asBeta) == .keyMismatch)
  }

  @Test func anotherTenantsIssuerWithThisTenantsSignatureIsRefused() {
    // acme cannot mint for beta: beta's key does not verify acme's signature.
    let claims = Self.claims(issuer: "beta-backend")
    #expect(
      refusal(TokenMinter.mint(claims, signer: .hs256(Array("x".utf8) + Self.betaSecret)))
        == .signatureInvalid)
    #expect(refusal(Self.acme(claims)) == .algorithmMismatch)
  }

  @Test func aTamperedClaimOrSignatureFailsTheSignature() {
    let token = Self.acme()
    let parts = token.split(separator: ".").map(String.init)
    let otherUser = Base64URL.encode(
      Array(
        #"{"iss":"acme-backend","sub":"user-2","scope":"upload","iat":1800000000,"exp":1800000600}"#.utf8))
    #expect(refusal(parts[0] + "." + otherUser + "." + parts[2]) == .signatureInvalid)
    var signature = Base64URL.decode(parts[2])!
    signature[10] ^= 0x40
    #expect(refusal(parts[0] + "." + parts[1] + "." + Base64URL.encode(signature)) == .signatureInvalid)
    #expect(refusal(parts[0] + "." + parts[1] + ".") == .signatureInvalid)
    #expect(refusal(Self.acme(), now: Self.now) == nil)
  }

  // MARK: - Claims (after a good signature)

  @Test(arguments: [
    #"{"iss":"acme-backend","exp":1800000600,"scope":"upload"}"#,  // no sub
    #"{"iss":"acme-backend","sub":"","exp":1800000600,"scope":"upload"}"#,
    #"{"iss":"acme-backend","sub":42,"exp":1800000600,"scope":"upload"}"#,
    #"{"iss":"acme-backend","sub":"u","scope":"upload"}"#,  // no exp
    #"{"iss":"acme-backend","sub":"u","exp":"1800000600","scope":"upload"}"#,
    #"{"iss":"acme-backend","sub":"u","exp":1800000600}"#,  // no scope
    #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":["upload"]}"#,
    #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload","max_files":2}"#,  // no jti
    #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload","jti":"j","max_files":0}"#,
    #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload","jti":"j","max_bytes":1.5}"#,
    #"{"iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload","iat":"now"}"#,
    #"{"iss":["acme-backend"],"sub":"u","exp":1800000600,"scope":"upload"}"#,
  ])
  func aMissingOrMistypedClaimIsRefused(claims: String) {
    #expect(refusal(Self.handMade(#"{"alg":"EdDSA"}"#, claims)) == .claimsInvalid)
  }

  @Test func anAudienceMustNameAttachdWhenPresent() {
    let base = #""iss":"acme-backend","sub":"u","exp":1800000600,"scope":"upload""#
    #expect(refusal(Self.handMade(#"{"alg":"EdDSA"}"#, "{\(base),\"aud\":\"attachd\"}")) == nil)
    #expect(refusal(Self.handMade(#"{"alg":"EdDSA"}"#, "{\(base),\"aud\":[\"x\",\"attachd\"]}")) == nil)
    #expect(refusal(Self.handMade(#"{"alg":"EdDSA"}"#, "{\(base),\"aud\":\"payments\"}")) == .audienceInvalid)
  }

  @Test func expiryAndNotBeforeAllowTheLeewayAndNoMore() {
    let token = Self.acme()  // iat = now, exp = now + 600, leeway 60
    #expect(refusal(token, now: Self.now + 659) == nil)
    #expect(refusal(token, now: Self.now + 660) == .expired)
    var later = Self.claims(issuedAt: Self.now - 100)
    later.notBefore = Self.now + 100
    #expect(refusal(Self.acme(later), now: Self.now + 40) == nil)
    #expect(refusal(Self.acme(later), now: Self.now + 39) == .notYetValid)
  }

  @Test func anIssuedAtAheadOfTheClockBeyondTheLeewayIsClockSkew() {
    let fromTheFuture = Self.acme(Self.claims(issuedAt: Self.now + 61))
    #expect(refusal(fromTheFuture, now: Self.now) == .issuedInFuture)
    #expect(refusal(Self.acme(Self.claims(issuedAt: Self.now + 60)), now: Self.now) == nil)
  }

  @Test func aLifetimeOverTheMaximumIsRefusedEvenWhenTheTokenIsFresh() {
    #expect(refusal(Self.acme(Self.claims(lifetime: 3600))) == nil)
    #expect(refusal(Self.acme(Self.claims(lifetime: 3601))) == .lifetimeTooLong)
    // Without iat the lifetime counts from now, with the leeway for the issuer's clock.
    let noIat = #"{"iss":"acme-backend","sub":"u","scope":"upload","exp":\#(Self.now + 3660)}"#
    #expect(refusal(Self.handMade(#"{"alg":"EdDSA"}"#, noIat)) == nil)
    let tooLong = #"{"iss":"acme-backend","sub":"u","scope":"upload","exp":\#(Self.now + 3661)}"#
    #expect(refusal(Self.handMade(#"{"alg":"EdDSA"}"#, tooLong)) == .lifetimeTooLong)
  }

  @Test func unknownScopeNamesAreIgnoredAndFractionalTimesRoundDown() throws {
    let claims = #"{"iss":"acme-backend","sub":"u","scope":"read profile:write upload","exp":1800000600.9}"#
    let principal = try verifier.verify(Self.handMade(#"{"alg":"EdDSA","typ":"jwt"}"#, claims), now: Self.now)
      .get()
    #expect(principal.scopes == [.read, .upload])
    #expect(principal.token?.expiresAt == 1_800_000_600)
  }

  @Test func anOversizedTokenIsRefusedUnread() {
    let claims = Self.claims(subject: String(repeating: "u", count: 255))
    #expect(refusal(Self.acme(claims)) == nil)
    #expect(refusal(Self.acme(Self.claims(subject: String(repeating: "u", count: 256)))) == .claimsInvalid)
    #expect(refusal(String(repeating: "a", count: 5000) + ".b.c") == .malformed)
  }

  // MARK: - Strict JSON

  @Test func theStrictJSONReaderTakesValidJSONAndNothingElse() {
    #expect(
      TokenJSON.parse(Array(#" {"a":"\ud83d\ude00\n","b":[1,-0.5e2,true,null],"c":{}} "#.utf8))
        == .object([
          "a": .string("😀\n"), "b": .array([.integer(1), .number(-50), .bool(true), .null]),
          "c": .object([:]),
        ]))
    #expect(TokenJSON.parse(Array(#"{"exp":1.8e9}"#.utf8)) == .object(["exp": .number(1.8e9)]))
    let deep = String(repeating: "[", count: 9) + String(repeating: "]", count: 9)
    let deepEnough = String(repeating: "[", count: 8) + "1" + String(repeating: "]", count: 8)
    #expect(TokenJSON.parse(Array(deep.utf8)) == nil)
    #expect(TokenJSON.parse(Array(deepEnough.utf8)) != nil)
    for bad in [
      #"{"a":1,"a":1}"#, #"{"a":"\udc00"}"#, #"{"a":"\ud800x"}"#, #"{"a":-}"#, #"{"a":1.}"#, #"{"a":.5}"#,
      #"{"a":1e}"#, #"{"a":tru}"#, #"{'a':1}"#, #"{"a":1,}"#, #"[1,]"#, #"{"a" 1}"#, "", "{} {}",
    ] {
      #expect(TokenJSON.parse(Array(bad.utf8)) == nil, "\(bad)")
    }
    #expect(TokenJSON.parse([0x22, 0xFF, 0x22]) == nil)  // invalid UTF-8 inside a string
  }

  // MARK: - Tokens and keys apart

  @Test func aCredentialIsATokenExactlyWhenItHasTwoDots() {
    #expect(TokenVerifier.isToken(Self.acme()))
    #expect(TokenVerifier.isToken("a.b."))
    #expect(!TokenVerifier.isToken(KeyGenerator.newKey()))
    #expect(!TokenVerifier.isToken("acme.key.with.three.dots"))
    #expect(!TokenVerifier.isToken("one.dot-key-0123456789"))
    #expect(throws: ConfigurationError.self) {
      try APIKey(tenant: "acme", key: "looks.like.atoken0123456789").validate(position: 1)
    }
  }

  @Test func theAuthenticatorSendsTokensToTheVerifierAndKeysToTheKeyTable() {
    let authenticator = Authenticator(
      configuration: .init(
        apiKeys: [APIKey(tenant: "acme", key: "plain-key-0123456789abc")], tokens: Self.configuration))
    if case .ok(let principal) = authenticator.authenticate(
      authorizationHeader: "Bearer \(Self.acme())", now: Self.now)
    {
      #expect(principal.user == "user-1")
    } else {
      Issue.record("token refused")
    }
    #expect(
      authenticator.authenticate(authorizationHeader: "Bearer \(Self.acme())", now: Self.now + 9999)
        == .refused(.expired))
    if case .ok(let principal) = authenticator.authenticate(
      authorizationHeader: "Bearer plain-key-0123456789abc")
    {
      #expect(principal.user == nil && principal.token == nil)
    } else {
      Issue.record("key refused")
    }
  }
}
