/// Reads a JPEG's markers and segment lengths in place, one at a time, never past the data: the
/// one place that knows fill bytes, standalone markers, length fields and entropy-coded data.
/// What a marker means is left to the caller (the header walker, the codec's facts, the output
/// verifier), each with its own rules for where to stop.
package struct JPEGMarkerReader {
  /// Why a read stopped.
  package enum Stop: Error, Equatable {
    /// The byte where a marker should start is missing or not 0xFF.
    case notAMarker
    /// The data ends inside a marker, a length field, a segment or entropy-coded data.
    case ended
    /// A segment length below 2 (the length counts its own two bytes).
    case badLength
  }

  let bytes: UnsafeRawBufferPointer
  /// Where the next marker, or the length field of the marker just read, starts.
  package var offset: Int

  /// A reader positioned after the SOI marker; nil when `bytes` do not start with one.
  package init?(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
    self.bytes = bytes
    offset = 2
  }

  /// Whether `marker` stands alone, with no length field: TEM and RST0–7.
  package static func isStandalone(_ marker: UInt8) -> Bool {
    marker == 0x01 || (0xD0...0xD7).contains(marker)
  }

  /// The next marker code, after any number of 0xFF fill bytes.
  package mutating func nextMarker() throws(Stop) -> UInt8 {
    guard offset < bytes.count, bytes[offset] == 0xFF else { throw .notAMarker }
    while offset < bytes.count, bytes[offset] == 0xFF { offset += 1 }
    guard offset < bytes.count else { throw .ended }
    offset += 1
    return bytes[offset - 1]
  }

  /// Moves `offset` over bytes that cannot start a marker, as libjpeg does before each marker it
  /// reads (warning "extraneous bytes before marker"): anything up to a 0xFF that is not
  /// followed by 0x00 (stuffed 0xFF 0x00 pairs are skipped too). Returns how many bytes it
  /// skipped. Header walks call it; the output verifier does not (our output has none).
  @discardableResult
  package mutating func skipExtraneousBytes() -> Int {
    let start = offset
    while offset < bytes.count {
      guard bytes[offset] == 0xFF else {
        offset += 1
        continue
      }
      var next = offset + 1
      while next < bytes.count, bytes[next] == 0xFF { next += 1 }
      // A marker (after any fill bytes), or the data's end: `nextMarker` takes it from here.
      guard next < bytes.count, bytes[next] == 0x00 else { break }
      offset = next + 1
    }
    return offset - start
  }

  /// The body of the segment whose length field is at `offset`, which moves past the segment.
  package mutating func segmentBody() throws(Stop) -> Range<Int> {
    guard bytes.count - offset >= 2 else { throw .ended }
    let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
    guard length >= 2 else { throw .badLength }
    guard length <= bytes.count - offset else { throw .ended }
    offset += length
    return offset - length + 2..<offset
  }

  /// Moves `offset` past the entropy-coded data of a scan (its stuffed 0xFF00 bytes and RSTn
  /// markers) to the next marker.
  package mutating func skipEntropyCodedData() throws(Stop) {
    let end = bytes.count
    while offset < end {
      if bytes[offset] != 0xFF {
        offset += 1
        continue
      }
      guard offset + 1 < end else { throw .ended }
      let next = bytes[offset + 1]
      if next == 0x00 || (0xD0...0xD7).contains(next) {
        offset += 2
      } else if next == 0xFF {
        offset += 1
      } else {
        return
      }
    }
    throw .ended
  }
}
