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
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    Self.appendDecimal(value.magnitude, to: &bytes)
  }

  public mutating func field(_ name: StaticString, _ value: UInt64) {
    key(name)
    Self.appendDecimal(value, to: &bytes)
  }

  /// The current UTC time as an RFC 3339 string field (see `timestamp()`), without allocating.
  public mutating func timeField(_ name: StaticString) {
    key(name)
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    bytes.append(UInt8(ascii: "\""))
    Self.appendTimestamp(seconds: now.tv_sec, milliseconds: Int(now.tv_nsec / 1_000_000), to: &bytes)
    bytes.append(UInt8(ascii: "\""))
  }

  /// A number with up to three decimals (durations in milliseconds).
  public mutating func field(_ name: StaticString, milliseconds value: Double) {
    key(name)
    let thousandths = UInt64((max(value, 0) * 1000).rounded())
    Self.appendDecimal(thousandths / 1000, to: &bytes)
    bytes.append(UInt8(ascii: "."))
    Self.appendDigits(thousandths % 1000, width: 3, to: &bytes)
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
    var out: [UInt8] = []
    appendTimestamp(seconds: seconds, milliseconds: milliseconds, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  static func appendTimestamp(seconds: Int, milliseconds: Int, to out: inout [UInt8]) {
    var t = time_t(seconds)
    var parts = tm()
    gmtime_r(&t, &parts)
    let fields: [(Int32, Int, UInt8)] = [
      (parts.tm_year + 1900, 4, UInt8(ascii: "-")), (parts.tm_mon + 1, 2, UInt8(ascii: "-")),
      (parts.tm_mday, 2, UInt8(ascii: "T")), (parts.tm_hour, 2, UInt8(ascii: ":")),
      (parts.tm_min, 2, UInt8(ascii: ":")), (parts.tm_sec, 2, UInt8(ascii: ".")),
    ]
    for (value, width, separator) in fields {
      appendDigits(UInt64(max(0, value)), width: width, to: &out)
      out.append(separator)
    }
    appendDigits(UInt64(max(0, milliseconds)), width: 3, to: &out)
    out.append(UInt8(ascii: "Z"))
  }

  /// Appends `value` in decimal.
  static func appendDecimal(_ value: some UnsignedInteger, to out: inout [UInt8]) {
    var v = UInt64(value)
    // UInt64.max has 20 digits; they are produced last to first.
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
      var start = 20
      repeat {
        start -= 1
        digits[start] = UInt8(ascii: "0") + UInt8(v % 10)
        v /= 10
      } while v > 0
      out.append(contentsOf: digits[start...])
    }
  }

  /// Appends `value` in decimal, left-padded with zeros to `width` digits.
  static func appendDigits(_ value: UInt64, width: Int, to out: inout [UInt8]) {
    var divisor: UInt64 = 1
    for _ in 1..<width { divisor *= 10 }
    var v = value % (divisor * 10)
    while divisor > 0 {
      out.append(UInt8(ascii: "0") + UInt8(v / divisor))
      v %= divisor
      divisor /= 10
    }
  }
}
