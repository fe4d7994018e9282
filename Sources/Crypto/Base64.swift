/// Base64 (RFC 4648 §4) with padding, as HTTP headers carry it (tus `Upload-Metadata` values and
/// `Upload-Checksum` digests).
public enum Base64 {
  static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// Encodes bytes as padded base64.
  public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    var out = Base64Codec.encode(Array(bytes), alphabet: alphabet)
    while out.count % 4 != 0 { out.append(UInt8(ascii: "=")) }
    return String(decoding: out, as: UTF8.self)
  }

  /// Decodes canonical padded base64; nil for a missing or extra `=`, another alphabet,
  /// whitespace, or non-zero spare bits (so each byte string has exactly one accepted form).
  public static func decode<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
    var input = Array(text.utf8)
    guard input.count % 4 == 0 else { return nil }
    var padding = 0
    while padding < 2, input.last == UInt8(ascii: "=") {
      input.removeLast()
      padding += 1
    }
    // A third `=`, or one left inside, is refused by the alphabet check below.
    return Base64Codec.decode(input, sextet: sextet)
  }

  private static func sextet(_ character: UInt8) -> UInt8? {
    switch character {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
    case UInt8(ascii: "+"): 62
    case UInt8(ascii: "/"): 63
    default: nil
    }
  }
}

/// The bit work shared by `Base64` and `Base64URL`: alphabets and padding differ, groups do not.
enum Base64Codec {
  /// Unpadded encoding of `input` in `alphabet`.
  static func encode(_ input: [UInt8], alphabet: [UInt8]) -> [UInt8] {
    var out = [UInt8]()
    out.reserveCapacity((input.count + 2) / 3 * 4)
    var index = 0
    while index + 3 <= input.count {
      let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
      out.append(alphabet[Int(value >> 18 & 0x3F)])
      out.append(alphabet[Int(value >> 12 & 0x3F)])
      out.append(alphabet[Int(value >> 6 & 0x3F)])
      out.append(alphabet[Int(value & 0x3F)])
      index += 3
    }
    let rest = input.count - index
    if rest == 1 {
      let value = UInt32(input[index]) << 16
      out.append(alphabet[Int(value >> 18 & 0x3F)])
      out.append(alphabet[Int(value >> 12 & 0x3F)])
    } else if rest == 2 {
      let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
      out.append(alphabet[Int(value >> 18 & 0x3F)])
      out.append(alphabet[Int(value >> 12 & 0x3F)])
      out.append(alphabet[Int(value >> 6 & 0x3F)])
    }
    return out
  }

  /// Decodes unpadded characters through `sextet`; nil for a character outside the alphabet, a
  /// length no encoding has, or non-zero spare bits.
  static func decode(_ input: [UInt8], sextet: (UInt8) -> UInt8?) -> [UInt8]? {
    // A lone trailing character carries 6 bits, not a byte: never valid.
    guard input.count % 4 != 1 else { return nil }
    var out = [UInt8]()
    out.reserveCapacity(input.count * 3 / 4)
    var accumulator: UInt32 = 0
    var bits = 0
    for character in input {
      guard let value = sextet(character) else { return nil }
      accumulator = accumulator << 6 | UInt32(value)
      bits += 6
      if bits >= 8 {
        bits -= 8
        out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
        accumulator &= (1 << UInt32(bits)) - 1
      }
    }
    // Canonical form only: leftover bits must be zero.
    guard accumulator == 0 else { return nil }
    return out
  }
}
