private import CCrypto

/// Cryptographically secure random bytes and identifiers (OpenSSL RAND_bytes).
public enum SecureRandom {
  /// `count` random bytes from the operating system's CSPRNG via OpenSSL.
  ///
  /// A failing CSPRNG is fatal: falling back to weaker randomness would make ids and
  /// signing keys guessable, which is worse than stopping.
  public static func bytes(_ count: Int) -> [UInt8] {
    precondition(count >= 0, "negative byte count")
    var out = [UInt8](repeating: 0, count: count)
    if count == 0 { return out }
    let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32($0.count)) }
    guard ok == 1 else { fatalError("RAND_bytes failed: no secure randomness available") }
    return out
  }

  /// A new identifier: `prefix` + 26 Crockford base32 characters of 128 random bits.
  ///
  /// Unrelated to any content, so an id tells nothing about the image and cannot be guessed.
  public static func identifier(prefix: String = "att_") -> String {
    prefix + CrockfordBase32.encode128(bytes(16))
  }

  /// An identifier of the same form named by `name` (the first 128 bits of its SHA-256, under a
  /// label of its own): the same on every node and after a restart, for a record that must be
  /// made at most once however often its work is redone. As hard to guess as `name` is.
  public static func identifier(naming name: String, prefix: String = "att_") -> String {
    prefix
      + CrockfordBase32.encode128(Array(SHA256.hash(Array("attachd identifier\u{0}\(name)".utf8)).prefix(16)))
  }

  /// True when `string` is `prefix` followed by exactly 26 Crockford base32 characters.
  ///
  /// Lets a route reject a malformed id as "not found" before touching storage.
  public static func isIdentifier(_ string: String, prefix: String = "att_") -> Bool {
    guard string.hasPrefix(prefix) else { return false }
    let body = string.utf8.dropFirst(prefix.utf8.count)
    guard body.count == 26 else { return false }
    // The first character carries only 3 bits (128 = 3 + 25 × 5).
    guard let first = body.first, CrockfordBase32.value(of: first).map({ $0 < 8 }) == true else {
      return false
    }
    return body.allSatisfy { CrockfordBase32.value(of: $0) != nil }
  }
}

/// Crockford's base32 alphabet (no I, L, O, U), upper case.
enum CrockfordBase32 {
  static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

  /// 16 bytes → 26 characters, most significant bits first (the first holds 3 bits).
  static func encode128(_ bytes: [UInt8]) -> String {
    precondition(bytes.count == 16)
    var high: UInt64 = 0
    var low: UInt64 = 0
    for i in 0..<8 { high = high << 8 | UInt64(bytes[i]) }
    for i in 8..<16 { low = low << 8 | UInt64(bytes[i]) }
    var out = [UInt8](repeating: 0, count: 26)
    // Emit from the least significant end: 26 groups of 5 bits of the 130-bit value.
    for position in stride(from: 25, through: 0, by: -1) {
      out[position] = alphabet[Int(low & 0x1F)]
      low = low >> 5 | (high & 0x1F) << 59
      high >>= 5
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The 5-bit value of an upper-case alphabet character, or nil.
  static func value(of character: UInt8) -> UInt8? {
    guard let index = alphabet.firstIndex(of: character) else { return nil }
    return UInt8(index)
  }
}
