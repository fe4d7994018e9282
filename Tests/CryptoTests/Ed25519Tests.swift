import Testing

@testable import Crypto

/// Ed25519 through libcrypto, against RFC 8037 Appendix A (the JOSE test vectors).
@Suite struct Ed25519Tests {
  // RFC 8037 A.1 (the private key's d and x), A.4 (the JWS signing input and its signature).
  static let d = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
  static let x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
  static let input = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
  static let signature =
    "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

  @Test func theRFC8037SignatureVerifiesUnderItsPublicKey() throws {
    let raw = try #require(Base64URL.decode(Self.x))
    let key = try #require(Ed25519PublicKey(raw: raw))
    let signature = try #require(Base64URL.decode(Self.signature))
    #expect(key.verify(signature: signature, message: Array(Self.input.utf8)))
  }

  @Test func theRFC8037PrivateKeySignsToTheSameBytesAndHasTheSamePublicKey() throws {
    let seed = try #require(Base64URL.decode(Self.d))
    let key = try #require(Ed25519PrivateKey(raw: seed))
    #expect(Base64URL.encode(key.sign(Array(Self.input.utf8))) == Self.signature)
    #expect(Base64URL.encode(key.publicKey.raw) == Self.x)
  }

  @Test func anyChangedBitOfMessageOrSignatureFailsVerification() throws {
    let raw = try #require(Base64URL.decode(Self.x))
    let key = try #require(Ed25519PublicKey(raw: raw))
    let signature = try #require(Base64URL.decode(Self.signature))
    let message = Array(Self.input.utf8)
    for index in [0, 31, 32, 63] {
      var bent = signature
      bent[index] ^= 0x01
      #expect(!key.verify(signature: bent, message: message))
    }
    var changed = message
    changed[changed.count - 1] ^= 0x01
    #expect(!key.verify(signature: signature, message: changed))
    #expect(!key.verify(signature: Array(signature.dropLast()), message: message))
    #expect(!key.verify(signature: [], message: message))
  }

  @Test func keysRoundTripThroughPEMAndOtherKeyTypesAreRefused() throws {
    let key = Ed25519PrivateKey()
    let pem = key.pem
    #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n") && pem.hasSuffix("-----END PRIVATE KEY-----\n"))
    let again = try #require(Ed25519PrivateKey(pem: pem))
    #expect(again.publicKey.raw == key.publicKey.raw)
    let publicKey = try #require(Ed25519PublicKey(pem: key.publicKey.pem))
    #expect(publicKey.verify(signature: key.sign(Array("m".utf8)), message: Array("m".utf8)))
    // An X25519 and a P-256 key (made with Python's cryptography) are valid keys, not Ed25519 ones.
    let x25519 = """
      -----BEGIN PUBLIC KEY-----
      MCowBQYDK2VuAyEAELknJdSXdVwh2WXS6SXlL8jwaMZ1FwIAxluY0sLuqGw=
      -----END PUBLIC KEY-----
      """
    let p256 = """
      -----BEGIN PUBLIC KEY-----
      MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFCLWtDJTt1FHSXKCnnr59TRcxUWo
      daqfxCV4ViV8wcugFpf4CaIxJHbOf/9ZK8WQ7mBDrp7CIz0tQiiJ8Xo8yg==
      -----END PUBLIC KEY-----
      """
    #expect(Ed25519PublicKey(pem: x25519) == nil)
    #expect(Ed25519PublicKey(pem: p256) == nil)
    #expect(Ed25519PublicKey(pem: "not a key") == nil)
    #expect(Ed25519PublicKey(pem: pem) == nil)
    #expect(Ed25519PrivateKey(pem: key.publicKey.pem) == nil)
    #expect(Ed25519PublicKey(raw: [1, 2, 3]) == nil)
  }
}
