/// Re-parses an output JPEG and accepts only SOI, APP0 (JFIF), DQT, SOF0/1/2, DHT, DRI, SOS with
/// its entropy-coded data (and RSTn inside it) and EOI — nothing after EOI. Anything else (EXIF,
/// ICC, XMP, IPTC, comments, MPF, trailing bytes) means a private byte could escape.
public enum JPEGOutputVerifier {
  /// What broke the rule.
  public enum Violation: Error, Equatable, Sendable {
    case noSOI
    case forbiddenMarker(UInt8)
    case notJFIF
    case truncated
    case bytesAfterEOI(Int)
    case noFrame
  }

  public static func verify(_ bytes: [UInt8]) throws(Violation) {
    try bytes.withBytes { bytes throws(Violation) in try verify(bytes) }
  }

  private static func verify(_ bytes: UnsafeRawBufferPointer) throws(Violation) {
    let r = ByteReader(bytes)
    guard r.matches(0, [0xFF, 0xD8]) else { throw .noSOI }
    var offset = 2
    var sawFrame = false
    var sawScan = false
    while true {
      guard r.u8(offset) == 0xFF else { throw .truncated }
      while r.u8(offset) == 0xFF { offset += 1 }
      guard let marker = r.u8(offset) else { throw .truncated }
      offset += 1
      switch marker {
      case 0xD9:
        guard sawFrame, sawScan else { throw .noFrame }
        if offset != bytes.count { throw .bytesAfterEOI(bytes.count - offset) }
        return
      case 0xE0, 0xDB, 0xC0, 0xC1, 0xC2, 0xC4, 0xDD, 0xDA:
        guard let length = r.u16(offset).map(Int.init), length >= 2, r.has(offset, length) else {
          throw .truncated
        }
        if marker == 0xE0 && !r.matches(offset + 2, Array("JFIF\0".utf8)) { throw .notJFIF }
        if [0xC0, 0xC1, 0xC2].contains(marker) { sawFrame = true }
        offset += length
        if marker == 0xDA {
          guard sawFrame else { throw .noFrame }
          sawScan = true
          offset = try skipEntropyCodedData(r, from: offset)
        }
      default:
        throw .forbiddenMarker(marker)
      }
    }
  }

  /// The offset of the first marker after a scan's entropy-coded data (skipping FF00 and RSTn).
  private static func skipEntropyCodedData(_ r: ByteReader, from start: Int) throws(Violation) -> Int {
    var i = start
    let bytes = r.bytes
    let end = bytes.count
    while i < end {
      if bytes[i] != 0xFF {
        i += 1
        continue
      }
      guard i + 1 < end else { throw .truncated }
      let next = bytes[i + 1]
      if next == 0x00 || (0xD0...0xD7).contains(next) {
        i += 2
      } else if next == 0xFF {
        i += 1
      } else {
        return i
      }
    }
    throw .truncated
  }
}
