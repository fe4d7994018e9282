/// One PNG chunk as its header describes it, found in place.
package struct PNGChunk {
  package let type: FourCC
  /// Offset of the chunk's length field.
  package let offset: Int
  /// Bytes of data the header declares (at most 2³¹ − 1).
  package let length: Int
  /// Whether the data and the CRC lie inside the bytes read.
  package let isComplete: Bool

  /// The chunk's data.
  package var data: Range<Int> { offset + 8..<offset + 8 + length }
  /// The whole chunk: length, type, data and CRC.
  package var range: Range<Int> { offset..<offset + 12 + length }
}

/// Reads a PNG's chunk headers in place, from the signature to IEND: the one place chunk lengths
/// are read and bounded. What a chunk means, and whether a file may end early, is the caller's.
package struct PNGChunkReader {
  package static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

  let bytes: UnsafeRawBufferPointer
  /// Where the next chunk header starts.
  package private(set) var offset = 8
  private var finished = false

  /// A reader after the signature; nil when `bytes` do not start with it.
  package init?(_ bytes: UnsafeRawBufferPointer) {
    guard ByteReader(bytes).matches(0, Self.signature) else { return nil }
    self.bytes = bytes
  }

  /// The next chunk, possibly incomplete; nil once the data has no room for another header or
  /// the walk has passed IEND or an incomplete chunk. Throws `.badChunk` for a length over
  /// 2³¹ − 1, which PNG forbids.
  package mutating func next() throws(PNGChunkWalker.Failure) -> PNGChunk? {
    let r = ByteReader(bytes)
    guard !finished, let length = r.u32(offset), let type = r.fourCC(offset + 4) else { return nil }
    guard length <= 0x7FFF_FFFF else { throw .badChunk }
    let chunk = PNGChunk(
      type: type, offset: offset, length: Int(length), isComplete: r.has(offset + 8, Int(length) + 4))
    if chunk.isComplete && type != FourCC("IEND") {
      offset = chunk.range.upperBound
    } else {
      finished = true
    }
    return chunk
  }
}
