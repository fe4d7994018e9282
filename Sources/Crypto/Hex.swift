/// Lower-case hexadecimal encoding of bytes.
public enum Hex {
  private static let digits = Array("0123456789abcdef".utf8)

  /// Two lower-case hex digits per byte.
  public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    var out = [UInt8]()
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Decodes hex (either case); nil for odd length or other characters.
  public static func decode(_ string: String) -> [UInt8]? {
    let input = Array(string.utf8)
    guard input.count % 2 == 0 else { return nil }
    var out = [UInt8]()
    out.reserveCapacity(input.count / 2)
    var index = 0
    while index < input.count {
      guard let high = nibble(input[index]), let low = nibble(input[index + 1]) else { return nil }
      out.append(high << 4 | low)
      index += 2
    }
    return out
  }

  private static func nibble(_ character: UInt8) -> UInt8? {
    switch character {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
    default: return nil
    }
  }
}
