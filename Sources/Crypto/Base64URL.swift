/// Base64url (RFC 4648 §5) without padding, as used in signed links.
public enum Base64URL {
  private static let alphabet = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

  /// Encodes bytes as unpadded base64url.
  public static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    String(decoding: Base64Codec.encode(Array(bytes), alphabet: alphabet), as: UTF8.self)
  }

  /// Decodes unpadded base64url; nil for padding, other alphabets, bad length or non-zero spare bits.
  public static func decode(_ string: String) -> [UInt8]? {
    Base64Codec.decode(Array(string.utf8), sextet: sextet)
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
