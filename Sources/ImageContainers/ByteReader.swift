/// Bounds-checked reads from untrusted bytes: every accessor returns nil instead of trapping.
///
/// Offsets are absolute indices into `bytes`; `limit` caps how far reads may go (a box or a
/// segment end), so a reader for a nested structure can never look outside its parent.
///
/// It reads the input in place (a spooled upload's file mapping is never copied to be parsed):
/// a reader is only valid while the bytes it was made over are, and never outlives the parse
/// that made it.
package struct ByteReader {
  package let bytes: UnsafeRawBufferPointer
  package let littleEndian: Bool
  package let start: Int
  package let limit: Int

  package init(_ bytes: UnsafeRawBufferPointer, littleEndian: Bool = false, start: Int = 0, limit: Int? = nil)
  {
    self.bytes = bytes
    self.littleEndian = littleEndian
    let end = min(limit ?? bytes.count, bytes.count)
    self.start = max(0, min(start, end))
    self.limit = end
  }

  /// A reader over `[offset, offset + length)`, or nil if that range is not inside this one.
  package func sub(_ offset: Int, _ length: Int) -> ByteReader? {
    guard has(offset, length) else { return nil }
    return ByteReader(bytes, littleEndian: littleEndian, start: offset, limit: offset + length)
  }

  package func with(littleEndian: Bool) -> ByteReader {
    ByteReader(bytes, littleEndian: littleEndian, start: start, limit: limit)
  }

  /// Whether `[offset, offset + length)` lies inside this reader's range.
  package func has(_ offset: Int, _ length: Int) -> Bool {
    offset >= start && length >= 0 && offset <= limit && length <= limit - offset
  }

  package func u8(_ offset: Int) -> UInt8? {
    has(offset, 1) ? bytes[offset] : nil
  }

  package func u16(_ offset: Int) -> UInt16? {
    guard has(offset, 2) else { return nil }
    let a = UInt16(bytes[offset])
    let b = UInt16(bytes[offset + 1])
    return littleEndian ? (b << 8 | a) : (a << 8 | b)
  }

  package func u24(_ offset: Int) -> UInt32? {
    guard has(offset, 3) else { return nil }
    let a = UInt32(bytes[offset])
    let b = UInt32(bytes[offset + 1])
    let c = UInt32(bytes[offset + 2])
    return littleEndian ? (c << 16 | b << 8 | a) : (a << 16 | b << 8 | c)
  }

  package func u32(_ offset: Int) -> UInt32? {
    guard has(offset, 4) else { return nil }
    var value: UInt32 = 0
    for i in 0..<4 {
      let byte = UInt32(bytes[offset + (littleEndian ? 3 - i : i)])
      value = value << 8 | byte
    }
    return value
  }

  package func u64(_ offset: Int) -> UInt64? {
    guard let high = u32(offset), let low = u32(offset + 4) else { return nil }
    return littleEndian
      ? UInt64(low) << 32 | UInt64(high)
      : UInt64(high) << 32 | UInt64(low)
  }

  /// An unsigned big- or little-endian integer of `size` bytes (0, 1, 2, 4 or 8); 0 bytes read as 0.
  package func uint(_ offset: Int, size: Int) -> UInt64? {
    switch size {
    case 0: return 0
    case 1: return u8(offset).map(UInt64.init)
    case 2: return u16(offset).map(UInt64.init)
    case 4: return u32(offset).map(UInt64.init)
    case 8: return u64(offset)
    default: return nil
    }
  }

  package func fourCC(_ offset: Int) -> FourCC? {
    guard has(offset, 4) else { return nil }
    return FourCC(bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3])
  }

  /// A copy of the bytes of `[offset, offset + length)`, or nil when out of range.
  package func slice(_ offset: Int, _ length: Int) -> [UInt8]? {
    has(offset, length) ? Array(bytes[offset..<(offset + length)]) : nil
  }

  /// Whether the bytes at `offset` equal `prefix`.
  package func matches(_ offset: Int, _ prefix: [UInt8]) -> Bool {
    guard has(offset, prefix.count) else { return false }
    for (i, byte) in prefix.enumerated() where bytes[offset + i] != byte { return false }
    return true
  }

  /// The offset of the first zero byte at or after `offset` (below `end`), or nil.
  package func nulTerminator(from offset: Int, end: Int? = nil) -> Int? {
    let stop = min(end ?? limit, limit)
    var i = max(offset, start)
    while i < stop {
      if bytes[i] == 0 { return i }
      i += 1
    }
    return nil
  }
}

extension Array where Element == UInt8 {
  /// `withUnsafeBytes` that keeps the body's typed error (the standard library's rethrows
  /// widens it to `any Error`): lets a `[UInt8]` entry point call the in-place reader.
  package func withBytes<Result, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Result) throws(E)
    -> Result
  {
    let outcome: Swift.Result<Result, E> = withUnsafeBytes { bytes in
      do throws(E) { return .success(try body(bytes)) } catch { return .failure(error) }
    }
    return try outcome.get()
  }
}

/// A four-character code (box, chunk or brand type).
public struct FourCC: Hashable, Sendable, CustomStringConvertible {
  public let value: UInt32

  public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
    value = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
  }

  public init(_ string: StaticString) {
    let p = string.utf8Start
    precondition(string.utf8CodeUnitCount == 4, "FourCC needs 4 ASCII bytes")
    self.init(p[0], p[1], p[2], p[3])
  }

  public var bytes: [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
  }

  public var description: String {
    // QuickTime's text atoms start with © (0xA9 in Mac Roman): shown as such, not as "?".
    String(
      bytes.map { (0x20...0x7E).contains($0) ? Character(Unicode.Scalar($0)) : $0 == 0xA9 ? "©" : "?" })
  }
}
