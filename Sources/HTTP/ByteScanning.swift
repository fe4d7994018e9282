#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Byte classes and fast searches shared by the parsers (RFC 9110 §5.6 grammar).
enum ASCII {
  static let cr: UInt8 = 0x0D
  static let lf: UInt8 = 0x0A
  static let space: UInt8 = 0x20
  static let tab: UInt8 = 0x09
  static let colon: UInt8 = 0x3A
  static let semicolon: UInt8 = 0x3B
  static let comma: UInt8 = 0x2C
  static let equals: UInt8 = 0x3D
  static let quote: UInt8 = 0x22
  static let backslash: UInt8 = 0x5C
  static let hyphen: UInt8 = 0x2D

  // Bit sets of tchar: "!#$%&'*+-.^_`|~", DIGIT and ALPHA.
  private static let tcharLow: UInt64 = 0x03ff_6cfa_0000_0000
  private static let tcharHigh: UInt64 = 0x57ff_ffff_c7ff_fffe

  @inline(__always)
  static func isTchar(_ b: UInt8) -> Bool {
    b < 64 ? (tcharLow >> UInt64(b)) & 1 != 0 : b < 128 && (tcharHigh >> UInt64(b &- 64)) & 1 != 0
  }

  /// field-vchar / SP / HTAB / obs-text: anything but CTLs (except HTAB) and DEL.
  @inline(__always)
  static func isFieldValueByte(_ b: UInt8) -> Bool {
    (b >= 0x20 && b != 0x7F) || b == tab
  }

  @inline(__always)
  static func isWhitespace(_ b: UInt8) -> Bool { b == space || b == tab }

  @inline(__always)
  static func lowercased(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }

  /// The value of a hexadecimal digit, or nil.
  @inline(__always)
  static func hexValue(_ b: UInt8) -> UInt64? {
    switch b {
    case 0x30...0x39: UInt64(b &- 0x30)
    case 0x41...0x46: UInt64(b &- 0x41 &+ 10)
    case 0x61...0x66: UInt64(b &- 0x61 &+ 10)
    default: nil
    }
  }
}

extension UnsafeRawBufferPointer {
  /// The index of the first `byte` at or after `start`, found with memchr.
  @inline(__always)
  func firstIndex(of byte: UInt8, from start: Int) -> Int? {
    guard start < count, let base = baseAddress else { return nil }
    guard let hit = memchr(base + start, Int32(byte), count - start) else { return nil }
    return UnsafeRawPointer(hit) - base
  }

  /// The bytes in `range` as a String (invalid UTF-8 is repaired, never trusted).
  @inline(__always)
  func string(_ range: Range<Int>) -> String {
    String(decoding: UnsafeRawBufferPointer(rebasing: self[range]), as: UTF8.self)
  }

  /// Whether the bytes in `range` equal `lowercaseASCII` ignoring ASCII case.
  @inline(__always)
  func equalsIgnoringCase(_ range: Range<Int>, _ lowercaseASCII: StaticString) -> Bool {
    guard range.count == lowercaseASCII.utf8CodeUnitCount else { return false }
    let other = lowercaseASCII.utf8Start
    var i = 0
    for j in range {
      if ASCII.lowercased(self[j]) != other[i] { return false }
      i += 1
    }
    return true
  }

  /// `range` without leading and trailing SP/HTAB.
  @inline(__always)
  func trimmingWhitespace(_ range: Range<Int>) -> Range<Int> {
    var lo = range.lowerBound
    var hi = range.upperBound
    while lo < hi, ASCII.isWhitespace(self[lo]) { lo += 1 }
    while hi > lo, ASCII.isWhitespace(self[hi - 1]) { hi -= 1 }
    return lo..<hi
  }

  /// Calls `body` with each comma-separated element of `range`, trimmed, empty ones skipped
  /// (the `#rule` list syntax of RFC 9110 §5.6.1).
  @inline(__always)
  func forEachListElement(_ range: Range<Int>, _ body: (Range<Int>) throws(HTTPParserError) -> Void)
    throws(HTTPParserError)
  {
    var start = range.lowerBound
    while start <= range.upperBound {
      var end = start
      while end < range.upperBound, self[end] != ASCII.comma { end += 1 }
      let element = trimmingWhitespace(start..<end)
      if !element.isEmpty { try body(element) }
      start = end + 1
    }
  }
}
