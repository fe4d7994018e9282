/// Base64url (RFC 4648 §5) without padding, as used in signed links.
public enum Base64URL {
  private static let alphabet = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

  /// Encodes bytes as unpadded base64url.
  public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    let input = Array(bytes)
    var out = [UInt8]()
    out.reserveCapacity((input.count * 4 + 2) / 3)
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
    return String(decoding: out, as: UTF8.self)
  }

  /// Decodes unpadded base64url; nil for padding, other alphabets, bad length or non-zero spare bits.
  public static func decode(_ string: String) -> [UInt8]? {
    let input = Array(string.utf8)
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
    // Canonical form only: leftover bits must be zero, so each byte string has one encoding.
    guard accumulator == 0 else { return nil }
    return out
  }

  private static func sextet(_ character: UInt8) -> UInt8? {
    switch character {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
    case UInt8(ascii: "-"): return 62
    case UInt8(ascii: "_"): return 63
    default: return nil
    }
  }
}
