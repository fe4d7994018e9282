/// Percent-encoding as SigV4 wants it (RFC 3986): every byte but `A-Z a-z 0-9 - . _ ~` becomes
/// `%XX` with upper-case hex.
///
/// libcurl 7.88 signs the path and query exactly as the URL spells them, so the URL must already
/// be in canonical form: the key encoded once (S3 does not double-encode), the query sorted.
enum S3URI {
  /// An object key as a URL path: each byte encoded except `/`, which separates segments.
  static func encodePath(_ key: String) -> String {
    encode(key, keepingSlash: true)
  }

  /// A query name or value, or a header value naming a key (`/` encoded too).
  static func encodeComponent(_ text: String) -> String {
    encode(text, keepingSlash: false)
  }

  /// A canonical query string: names and values encoded, sorted by name then value, `=` always
  /// present (`uploads=`), so the URL sent is the string signed.
  static func query(_ items: [(name: String, value: String)]) -> String {
    items.map { (encodeComponent($0.name), encodeComponent($0.value)) }
      .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
      .map { "\($0.0)=\($0.1)" }
      .joined(separator: "&")
  }

  /// Undoes percent-encoding (and `+` as a space when `plusIsSpace`); nil for a malformed
  /// escape or bytes that are not UTF-8.
  static func decode(_ text: String, plusIsSpace: Bool) -> String? {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(text.utf8.count)
    var iterator = text.utf8.makeIterator()
    while let byte = iterator.next() {
      switch byte {
      case UInt8(ascii: "%"):
        guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue)
        else { return nil }
        bytes.append(high << 4 | low)
      case UInt8(ascii: "+") where plusIsSpace:
        bytes.append(UInt8(ascii: " "))
      default:
        bytes.append(byte)
      }
    }
    return String(validating: bytes, as: UTF8.self)
  }

  private static let hexDigits = Array("0123456789ABCDEF".utf8)

  private static func encode(_ text: String, keepingSlash: Bool) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(text.utf8.count)
    for byte in text.utf8 {
      if isUnreserved(byte) || (keepingSlash && byte == UInt8(ascii: "/")) {
        out.append(byte)
      } else {
        out += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
      }
    }
    return String(decoding: out, as: UTF8.self)
  }

  private static func isUnreserved(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
      UInt8(ascii: "~"):
      true
    default: false
    }
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
