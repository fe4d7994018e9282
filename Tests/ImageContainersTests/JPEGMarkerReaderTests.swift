import Testing

@testable import ImageContainers

@Suite struct JPEGMarkerReaderTests {
  /// The markers and segment bodies of `bytes`, read until the reader stops, and why it stopped.
  static func walk(_ bytes: [UInt8]) -> (segments: [String], stop: JPEGMarkerReader.Stop?) {
    bytes.withUnsafeBytes { raw in
      guard var reader = JPEGMarkerReader(raw) else { return ([], nil) }
      var segments: [String] = []
      do throws(JPEGMarkerReader.Stop) {
        while true {
          let marker = try reader.nextMarker()
          if JPEGMarkerReader.isStandalone(marker) {
            segments.append("\(marker)")
            continue
          }
          let body = try reader.segmentBody()
          segments.append("\(marker):\(body)")
        }
      } catch {
        return (segments, error)
      }
    }
  }

  @Test func fillBytesAndStandaloneMarkersCarryNoLength() {
    let walk = Self.walk([0xFF, 0xD8, 0xFF, 0xFF, 0xFF, 0xD0, 0xFF, 0x01, 0xFF, 0xE0, 0x00, 0x04, 1, 2])
    #expect(walk.segments == ["208", "1", "224:12..<14"])
    #expect(walk.stop == .notAMarker)
  }

  @Test func aCutLengthOrBodyEndsTheWalkAndAShortLengthIsBad() {
    #expect(Self.walk([0xFF, 0xD8, 0xFF, 0xE1, 0x00]).stop == .ended)
    #expect(Self.walk([0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x09, 1, 2]).stop == .ended)
    #expect(Self.walk([0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x01]).stop == .badLength)
    #expect(Self.walk([0xFF, 0xD8, 0xFF, 0xFF]).stop == .ended)
    #expect(Self.walk([0xFF, 0xD9]).stop == nil)
  }

  @Test func entropyCodedDataIsSkippedToTheNextMarker() throws {
    // Stuffed 0xFF00, an RST marker and a fill byte inside the scan, then EOI.
    let bytes: [UInt8] = [0xFF, 0xD8, 1, 0xFF, 0x00, 2, 0xFF, 0xD3, 3, 0xFF, 0xFF, 0xD9]
    try bytes.withUnsafeBytes { raw in
      var reader = try #require(JPEGMarkerReader(raw))
      try reader.skipEntropyCodedData()
      #expect(reader.offset == 10)
      #expect(try reader.nextMarker() == 0xD9)
    }
    let cut: [UInt8] = [0xFF, 0xD8, 1, 2, 0xFF]
    cut.withUnsafeBytes { raw in
      var reader = JPEGMarkerReader(raw)!
      #expect(throws: JPEGMarkerReader.Stop.ended) { try reader.skipEntropyCodedData() }
    }
  }

  @Test func extraneousBytesAreSkippedAsLibjpegSkipsThem() throws {
    // Stray bytes and a stuffed 0xFF00 pair before a marker with fill bytes; then nothing to
    // skip; then bytes that run to the end.
    let bytes: [UInt8] = [0xFF, 0xD8, 1, 2, 0xFF, 0x00, 3, 0xFF, 0xFF, 0xDB, 7, 8]
    try bytes.withUnsafeBytes { raw in
      var reader = try #require(JPEGMarkerReader(raw))
      #expect(reader.skipExtraneousBytes() == 5)
      #expect(reader.skipExtraneousBytes() == 0)
      #expect(try reader.nextMarker() == 0xDB)
      #expect(reader.skipExtraneousBytes() == 2)
      #expect(throws: JPEGMarkerReader.Stop.notAMarker) { try reader.nextMarker() }
    }
  }

  @Test func theHeaderWalkReadsPastStrayBytesBetweenSegments() throws {
    // SOI, 3 stray bytes, a minimal baseline frame header and a scan header.
    let frame: [UInt8] = [0xFF, 0xC0, 0x00, 0x0B, 8, 0x00, 0x10, 0x00, 0x20, 1, 1, 0x11, 0]
    let scan: [UInt8] = [0xFF, 0xDA, 0x00, 0x08, 1, 1, 0, 0, 63, 0]
    let info = try JPEGMarkerWalker.read([0xFF, 0xD8, 0x12, 0x34, 0x56] + frame + [0x00] + scan)
    #expect((info.width, info.height, info.components) == (32, 16, 1))
    #expect(info.firstScanOffset == 5 + frame.count + 1)
  }
}
