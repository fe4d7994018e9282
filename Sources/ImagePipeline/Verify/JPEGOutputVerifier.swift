import ImageContainers

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
    guard var markers = JPEGMarkerReader(bytes) else { throw .noSOI }
    var sawFrame = false
    var sawScan = false
    while true {
      let marker = try truncated { () throws(JPEGMarkerReader.Stop) in try markers.nextMarker() }
      switch marker {
      case 0xD9:
        guard sawFrame, sawScan else { throw .noFrame }
        if markers.offset != bytes.count { throw .bytesAfterEOI(bytes.count - markers.offset) }
        return
      case 0xE0, 0xDB, 0xC0, 0xC1, 0xC2, 0xC4, 0xDD, 0xDA:
        let body = try truncated { () throws(JPEGMarkerReader.Stop) in try markers.segmentBody() }
        if marker == 0xE0 && !ByteReader(bytes).matches(body.lowerBound, Array("JFIF\0".utf8)) {
          throw .notJFIF
        }
        if [0xC0, 0xC1, 0xC2].contains(marker) { sawFrame = true }
        if marker == 0xDA {
          guard sawFrame else { throw .noFrame }
          sawScan = true
          try truncated { () throws(JPEGMarkerReader.Stop) in try markers.skipEntropyCodedData() }
        }
      default:
        throw .forbiddenMarker(marker)
      }
    }
  }

  /// A read of the marker reader, where any stop (a cut file, a missing marker, a bad length) is
  /// a truncation.
  private static func truncated<T>(_ read: () throws(JPEGMarkerReader.Stop) -> T) throws(Violation) -> T {
    do { return try read() } catch { throw .truncated }
  }
}
