import Testing

@testable import Crypto

@Suite struct SHA256Tests {
  @Test(arguments: [
    ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    ),
  ])
  func oneShotDigestMatchesNISTVector(message: String, expected: String) {
    #expect(Hex.encode(SHA256.hash(message)) == expected)
    #expect(Hex.encode(SHA256.hash(Array(message.utf8))) == expected)
  }

  @Test func streamingAMillionAsMatchesNISTVector() {
    let hasher = SHA256()
    let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
    for _ in 0..<1000 { hasher.update(chunk) }
    #expect(hasher.finalizeHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
  }

  @Test func streamingInAnySplitEqualsOneShot() {
    let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let expected = SHA256.hash(message)
    for split in [0, 1, 63, 64, 65, 500, 999, 1000] {
      let hasher = SHA256()
      hasher.update(message[..<split])
      hasher.update(message[split...])
      #expect(hasher.finalize() == expected, "split at \(split)")
    }
  }
}

@Suite struct MessageDigestTests {
  @Test(arguments: [
    (MessageDigest.Algorithm.sha1, "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
    (.sha1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
    (.md5, "", "d41d8cd98f00b204e9800998ecf8427e"),
    (.md5, "abc", "900150983cd24fb0d6963f7d28e17f72"),
    (.sha256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
  ])
  func digestMatchesPublishedVector(algorithm: MessageDigest.Algorithm, message: String, expected: String) {
    let digest = MessageDigest.hash(Array(message.utf8), algorithm)
    #expect(digest.count == algorithm.byteCount)
    #expect(Hex.encode(digest) == expected)
  }

  @Test(arguments: MessageDigest.Algorithm.allCases)
  func streamingInAnySplitEqualsOneShot(algorithm: MessageDigest.Algorithm) {
    let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let expected = MessageDigest.hash(message, algorithm)
    for split in [0, 1, 63, 64, 65, 999, 1000] {
      let digest = MessageDigest(algorithm)
      digest.update(message[..<split])
      digest.update(message[split...])
      #expect(digest.finalize() == expected, "split at \(split)")
    }
  }
}

@Suite struct HMACSHA256Tests {
  // RFC 4231 test cases 1, 2, 3, 4, 6 and 7 (case 5 is a truncated tag).
  @Test(arguments: [
    (
      [UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    ),
    (
      Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    ),
    (
      [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
      "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
    ),
    (
      Array(1...25), [UInt8](repeating: 0xcd, count: 50),
      "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
    ),
    (
      [UInt8](repeating: 0xaa, count: 131),
      Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    ),
    (
      [UInt8](repeating: 0xaa, count: 131),
      Array(
        ("This is a test using a larger than block-size key and a larger than block-size data. "
          + "The key needs to be hashed before being used by the HMAC algorithm.").utf8),
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
    ),
  ])
  func tagMatchesRFC4231Vector(key: [UInt8], message: [UInt8], expected: String) {
    #expect(Hex.encode(HMACSHA256.authenticate(message, key: key)) == expected)
  }

  @Test func stringMessageIsItsUTF8Bytes() {
    let key = Array("k".utf8)
    #expect(
      HMACSHA256.authenticate("héllo", key: key) == HMACSHA256.authenticate(Array("héllo".utf8), key: key))
    #expect(HMACSHA256.authenticate("", key: key).count == 32)
  }
}

@Suite struct EncodingTests {
  @Test(arguments: [
    ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
    ("foobar", "Zm9vYmFy"),
  ])
  func base64URLMatchesRFC4648Vectors(plain: String, encoded: String) {
    #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
    #expect(Base64URL.decode(encoded) == Array(plain.utf8))
  }

  @Test func base64URLUsesDashAndUnderscore() {
    #expect(Base64URL.encode([0xfb, 0xff, 0xfe]) == "-__-")
    #expect(Base64URL.decode("-__-") == [0xfb, 0xff, 0xfe])
  }

  @Test(arguments: ["Zg==", "Zm9v+", "Zm9v/", "Z", "Zh", "Zm9 ", "Zm8=", "é"])
  func base64URLRejectsPaddingOtherAlphabetsAndNonCanonicalInput(input: String) {
    #expect(Base64URL.decode(input) == nil)
  }

  @Test func base64URLRoundTripsEveryLength() {
    for length in 0..<70 {
      let bytes = SecureRandom.bytes(length)
      #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
    }
  }

  @Test(arguments: [
    ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
    ("foobar", "Zm9vYmFy"),
  ])
  func base64MatchesRFC4648Vectors(plain: String, encoded: String) {
    #expect(Base64.encode(Array(plain.utf8)) == encoded)
    #expect(Base64.decode(encoded) == Array(plain.utf8))
  }

  @Test func base64UsesPlusAndSlash() {
    #expect(Base64.encode([0xfb, 0xff, 0xfe]) == "+//+")
    #expect(Base64.decode("+//+") == [0xfb, 0xff, 0xfe])
  }

  @Test(arguments: [
    "Zg", "Zm8", "Zg=", "Zg===", "Z===", "Zh==", "Zm9=", "Zm9v-___", "Zm 9v", "Zm9v\n", "=Zm9", "Zg==Zg==",
    "é",
  ])
  func base64RejectsMissingPaddingOtherAlphabetsAndNonCanonicalInput(input: String) {
    #expect(Base64.decode(input) == nil)
  }

  @Test func base64RoundTripsEveryLength() {
    for length in 0..<70 {
      let bytes = SecureRandom.bytes(length)
      #expect(Base64.decode(Base64.encode(bytes)) == bytes)
    }
  }

  @Test func hexRoundTripsAndRejectsBadInput() {
    #expect(Hex.encode([0x00, 0xab, 0xff]) == "00abff")
    #expect(Hex.decode("00ABff") == [0x00, 0xab, 0xff])
    #expect(Hex.decode("abc") == nil)
    #expect(Hex.decode("zz") == nil)
  }
}

@Suite struct SecureRandomTests {
  @Test func bytesAreFreshEachCall() {
    #expect(SecureRandom.bytes(0).isEmpty)
    #expect(SecureRandom.bytes(32).count == 32)
    #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
  }

  @Test func identifiersAreAttPrefixedCrockfordAndUnique() {
    var seen = Set<String>()
    for _ in 0..<2000 {
      let id = SecureRandom.identifier()
      #expect(id.count == 30)
      #expect(SecureRandom.isIdentifier(id))
      seen.insert(id)
    }
    #expect(seen.count == 2000)
    let alphabet = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    #expect(seen.allSatisfy { $0.dropFirst(4).allSatisfy(alphabet.contains) })
    // 128 bits in 26 digits: the first digit carries 3 bits, so it is 0…7.
    #expect(seen.allSatisfy { "01234567".contains($0.dropFirst(4).first!) })
    #expect(Set(seen.map { $0.dropFirst(4).first! }).count > 4)
  }

  @Test(arguments: [
    "", "att_", "att_" + String(repeating: "0", count: 25), "att_" + String(repeating: "0", count: 27),
    "att_8" + String(repeating: "Z", count: 25), "att_" + String(repeating: "0", count: 25) + "I",
    "att_" + String(repeating: "0", count: 25) + "a", "xyz_" + String(repeating: "0", count: 26),
    "att_../../../../etc/passwd0000",
  ])
  func malformedIdentifiersAreRecognised(candidate: String) {
    #expect(!SecureRandom.isIdentifier(candidate))
  }

  @Test func allZeroAndAllOneIdentifiersAreWellFormed() {
    #expect(SecureRandom.isIdentifier("att_" + String(repeating: "0", count: 26)))
    #expect(SecureRandom.isIdentifier("att_7" + String(repeating: "Z", count: 25)))
    #expect(SecureRandom.isIdentifier("key_" + String(repeating: "1", count: 26), prefix: "key_"))
  }
}

@Suite struct ConstantTimeEqualsTests {
  @Test func equalBytesCompareEqualAndAnyDifferenceDoesNot() {
    let a = SecureRandom.bytes(32)
    #expect(constantTimeEquals(a, a))
    for index in [0, 15, 31] {
      var b = a
      b[index] ^= 0x01
      #expect(!constantTimeEquals(a, b))
    }
    #expect(!constantTimeEquals(a, a.dropLast()))
    #expect(constantTimeEquals([UInt8](), [UInt8]()))
    #expect(constantTimeEquals("secret", "secret"))
    #expect(!constantTimeEquals("secret", "secreT"))
  }
}

@Suite struct CrockfordBase32Tests {
  @Test func encodesMostSignificantBitsFirst() {
    #expect(
      CrockfordBase32.encode128([UInt8](repeating: 0, count: 15) + [1]) == String(repeating: "0", count: 25)
        + "1")
    #expect(
      CrockfordBase32.encode128([0x80] + [UInt8](repeating: 0, count: 15)) == "4"
        + String(repeating: "0", count: 25))
    #expect(
      CrockfordBase32.encode128([UInt8](repeating: 0xFF, count: 16)) == "7"
        + String(repeating: "Z", count: 25))
    #expect(
      CrockfordBase32.encode128([UInt8](repeating: 0, count: 15) + [0x20]) == String(
        repeating: "0", count: 24) + "10")
  }
}
