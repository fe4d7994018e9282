/// A strict, bounded JSON reader for token headers and claims (RFC 8259).
///
/// Stricter than Foundation's: a member name given twice is an error (RFC 7515 §4 lets a
/// parser refuse such a header, and the alternatives — first or last wins — are how two
/// parsers come to disagree about who a token is for), as are invalid UTF-8, lone surrogates,
/// control characters in strings, leading zeros, trailing bytes, and nesting beyond
/// `maximumDepth`. The input is already bounded by the size of a bearer credential.
enum TokenJSON: Equatable {
  case null
  case bool(Bool)
  /// A number without fraction or exponent that fits an `Int`.
  case integer(Int)
  /// Any other number.
  case number(Double)
  case string(String)
  case array([TokenJSON])
  case object([String: TokenJSON])

  /// Most containers nested in one another (claims are flat; custom claims may nest a little).
  static let maximumDepth = 8

  /// Parses one JSON text; nil when it is not strictly valid.
  static func parse(_ bytes: [UInt8]) -> TokenJSON? {
    var reader = Reader(bytes: bytes)
    guard let value = reader.value(depth: 0) else { return nil }
    reader.skipSpace()
    return reader.position == bytes.count ? value : nil
  }

  /// A number (NumericDate, RFC 7519 §2) rounded down to whole seconds.
  var secondsValue: Int? {
    switch self {
    case .integer(let value): value
    case .number(let value): value.isFinite && abs(value) < 9.0e15 ? Int(value.rounded(.down)) : nil
    default: nil
    }
  }

  private struct Reader {
    let bytes: [UInt8]
    var position = 0

    mutating func skipSpace() {
      while position < bytes.count,
        bytes[position] == 0x20 || bytes[position] == 0x09 || bytes[position] == 0x0A
          || bytes[position] == 0x0D
      {
        position += 1
      }
    }

    mutating func consume(_ literal: StaticString) -> Bool {
      let count = literal.utf8CodeUnitCount
      guard position + count <= bytes.count else { return false }
      let matches = literal.withUTF8Buffer { bytes[position..<(position + count)].elementsEqual($0) }
      if matches { position += count }
      return matches
    }

    mutating func value(depth: Int) -> TokenJSON? {
      skipSpace()
      guard position < bytes.count else { return nil }
      switch bytes[position] {
      // `depth` counts the containers around this value: at most `maximumDepth` may nest.
      case UInt8(ascii: "{"): return depth < TokenJSON.maximumDepth ? object(depth: depth) : nil
      case UInt8(ascii: "["): return depth < TokenJSON.maximumDepth ? array(depth: depth) : nil
      case UInt8(ascii: "\""): return string().map(TokenJSON.string)
      case UInt8(ascii: "t"): return consume("true") ? .bool(true) : nil
      case UInt8(ascii: "f"): return consume("false") ? .bool(false) : nil
      case UInt8(ascii: "n"): return consume("null") ? .null : nil
      default: return number()
      }
    }

    mutating func object(depth: Int) -> TokenJSON? {
      position += 1
      var members: [String: TokenJSON] = [:]
      skipSpace()
      if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
        position += 1
        return .object(members)
      }
      while true {
        skipSpace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), let name = string() else {
          return nil
        }
        skipSpace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
        position += 1
        guard let member = value(depth: depth + 1) else { return nil }
        // A repeated name is refused, whatever its value.
        guard members.updateValue(member, forKey: name) == nil else { return nil }
        skipSpace()
        guard position < bytes.count else { return nil }
        if bytes[position] == UInt8(ascii: ",") {
          position += 1
          continue
        }
        guard bytes[position] == UInt8(ascii: "}") else { return nil }
        position += 1
        return .object(members)
      }
    }

    mutating func array(depth: Int) -> TokenJSON? {
      position += 1
      var elements: [TokenJSON] = []
      skipSpace()
      if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
        position += 1
        return .array(elements)
      }
      while true {
        guard let element = value(depth: depth + 1) else { return nil }
        elements.append(element)
        skipSpace()
        guard position < bytes.count else { return nil }
        if bytes[position] == UInt8(ascii: ",") {
          position += 1
          continue
        }
        guard bytes[position] == UInt8(ascii: "]") else { return nil }
        position += 1
        return .array(elements)
      }
    }

    mutating func string() -> String? {
      position += 1
      var out: [UInt8] = []
      while position < bytes.count {
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""):
          return String(validating: out, as: UTF8.self)
        case UInt8(ascii: "\\"):
          guard position < bytes.count else { return nil }
          let escape = bytes[position]
          position += 1
          switch escape {
          case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
          case UInt8(ascii: "b"): out.append(0x08)
          case UInt8(ascii: "f"): out.append(0x0C)
          case UInt8(ascii: "n"): out.append(0x0A)
          case UInt8(ascii: "r"): out.append(0x0D)
          case UInt8(ascii: "t"): out.append(0x09)
          case UInt8(ascii: "u"):
            guard let scalar = unicodeEscape() else { return nil }
            out.append(contentsOf: String(Character(scalar)).utf8)
          default: return nil
          }
        case 0x00..<0x20:
          return nil
        default:
          out.append(byte)
        }
      }
      return nil
    }

    /// `XXXX` after `\u`, or a surrogate pair `XXXX\uXXXX`; lone surrogates are refused.
    mutating func unicodeEscape() -> Unicode.Scalar? {
      guard let high = hex4() else { return nil }
      if (0xD800..<0xDC00).contains(high) {
        guard consume("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
        return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
      }
      return Unicode.Scalar(high)
    }

    mutating func hex4() -> UInt32? {
      guard position + 4 <= bytes.count else { return nil }
      var value: UInt32 = 0
      for _ in 0..<4 {
        let byte = bytes[position]
        let digit: UInt8
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
        default: return nil
        }
        value = value << 4 | UInt32(digit)
        position += 1
      }
      return value
    }

    mutating func number() -> TokenJSON? {
      let start = position
      func digits() -> Int {
        let first = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
          position += 1
        }
        return position - first
      }
      if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
      let integerStart = position
      let integerDigits = digits()
      guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
        return nil
      }
      var integral = true
      if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
        position += 1
        guard digits() > 0 else { return nil }
        integral = false
      }
      if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")
      {
        position += 1
        if position < bytes.count,
          bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")
        {
          position += 1
        }
        guard digits() > 0 else { return nil }
        integral = false
      }
      let text = String(decoding: bytes[start..<position], as: UTF8.self)
      if integral, let value = Int(text) { return .integer(value) }
      guard let value = Double(text), value.isFinite else { return nil }
      return .number(value)
    }
  }
}
