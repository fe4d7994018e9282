#if canImport(Glibc)
  import Glibc
#endif

/// Small, allocation-light JSON writing for log lines and problem bodies.
///
/// Log lines are written on every request, so this avoids Foundation's encoders (which box
/// every value) and appends straight into one byte buffer.
public struct JSONText: Sendable {
  /// The bytes written so far.
  public private(set) var bytes: [UInt8] = []
  private var needsComma = false

  public init(capacity: Int = 256) {
    bytes.reserveCapacity(capacity)
    bytes.append(UInt8(ascii: "{"))
  }

  /// Closes the object and returns its bytes, optionally followed by a newline.
  public consuming func finish(newline: Bool = false) -> [UInt8] {
    bytes.append(UInt8(ascii: "}"))
    if newline { bytes.append(UInt8(ascii: "\n")) }
    return bytes
  }

  public mutating func field(_ name: StaticString, _ value: some StringProtocol) {
    key(name)
    Self.appendQuoted(value, to: &bytes)
  }

  public mutating func field(_ name: StaticString, _ value: Int) {
    key(name)
    bytes.append(contentsOf: String(value).utf8)
  }

  public mutating func field(_ name: StaticString, _ value: UInt64) {
    key(name)
    bytes.append(contentsOf: String(value).utf8)
  }

  /// A number with up to three decimals (durations in milliseconds).
  public mutating func field(_ name: StaticString, milliseconds value: Double) {
    key(name)
    let thousandths = Int((max(value, 0) * 1000).rounded())
    bytes.append(contentsOf: String(thousandths / 1000).utf8)
    bytes.append(UInt8(ascii: "."))
    let fraction = thousandths % 1000
    if fraction < 100 { bytes.append(UInt8(ascii: "0")) }
    if fraction < 10 { bytes.append(UInt8(ascii: "0")) }
    bytes.append(contentsOf: String(fraction).utf8)
  }

  private mutating func key(_ name: StaticString) {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
    needsComma = true
    bytes.append(UInt8(ascii: "\""))
    name.withUTF8Buffer { bytes.append(contentsOf: $0) }
    bytes.append(UInt8(ascii: "\""))
    bytes.append(UInt8(ascii: ":"))
  }

  /// Appends `value` as a JSON string literal (RFC 8259 §7), escaping controls, `"` and `\`.
  public static func appendQuoted(_ value: some StringProtocol, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for byte in value.utf8 {
      switch byte {
      case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
      case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
      case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
      case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
      case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
      case 0..<0x20, 0x7F:
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        out.append(contentsOf: [
          0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
        ])
      default: out.append(byte)
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  /// The current UTC time as RFC 3339 with milliseconds, e.g. `2026-11-30T07:04:46.123Z`.
  public static func timestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return timestamp(seconds: now.tv_sec, milliseconds: Int(now.tv_nsec / 1_000_000))
  }

  /// Formats a Unix time as RFC 3339 UTC with milliseconds.
  public static func timestamp(seconds: Int, milliseconds: Int) -> String {
    var t = time_t(seconds)
    var parts = tm()
    gmtime_r(&t, &parts)
    func pad(_ v: Int32, _ width: Int) -> String {
      let s = String(v)
      return String(repeating: "0", count: max(0, width - s.count)) + s
    }
    return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
      + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds), 3))Z"
  }
}
