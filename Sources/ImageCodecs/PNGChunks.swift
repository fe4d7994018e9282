/// A bounds-checked walk over a PNG's chunks, from the signature to IEND.
struct PNGChunks {
  struct Chunk {
    /// The four type bytes as a big-endian integer.
    var type: UInt32
    /// The whole chunk: length, type, data and CRC.
    var range: Range<Int>
    /// The chunk's data only.
    var data: Range<Int>
  }

  static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
  static func type(_ name: String) -> UInt32 { name.utf8.reduce(0) { $0 << 8 | UInt32($1) } }
  static let IHDR = type("IHDR")
  static let PLTE = type("PLTE")
  static let IDAT = type("IDAT")
  static let IEND = type("IEND")
  static let tRNS = type("tRNS")
  static let iCCP = type("iCCP")
  static let eXIf = type("eXIf")

  var chunks: [Chunk] = []

  /// Walks `data`; throws `.corrupt` for a bad signature or chunk length, `.truncated` when the
  /// data ends before IEND.
  init(_ data: UnsafeRawBufferPointer) throws {
    guard data.count >= 8, Array(data[0..<8]) == Self.signature else {
      throw CodecError(.corrupt, codec: "png", "bad signature")
    }
    var i = 8
    while true {
      guard i + 12 <= data.count else {
        throw CodecError(.truncated, codec: "png", "data ends at \(data.count) before IEND")
      }
      let length = Int(data[i]) << 24 | Int(data[i + 1]) << 16 | Int(data[i + 2]) << 8 | Int(data[i + 3])
      let type =
        UInt32(data[i + 4]) << 24 | UInt32(data[i + 5]) << 16 | UInt32(data[i + 6]) << 8 | UInt32(data[i + 7])
      guard length <= 0x7FFF_FFFF else { throw CodecError(.corrupt, codec: "png", "chunk length \(length)") }
      guard length <= data.count - i - 12 else {
        throw CodecError(.truncated, codec: "png", "chunk at \(i) runs past the end")
      }
      if chunks.isEmpty, type != Self.IHDR {
        throw CodecError(.corrupt, codec: "png", "first chunk is not IHDR")
      }
      chunks.append(Chunk(type: type, range: i..<i + 12 + length, data: i + 8..<i + 8 + length))
      i += 12 + length
      if type == Self.IEND { return }
    }
  }

  /// The first chunk of `type`.
  func first(_ type: UInt32) -> Chunk? { chunks.first { $0.type == type } }

  /// A copy of the stream holding only the chunks libpng needs to draw the image (IHDR, PLTE,
  /// tRNS, IDAT, IEND). Dropping the rest means text chunks are never inflated (zTXt bombs),
  /// colour chunks are handled by us (iCCP) or ignored like browsers do (gAMA, cHRM), APNG
  /// chunks leave the default image, and any libpng warning left can only be about the image.
  func imageOnly(_ data: UnsafeRawBufferPointer) -> [UInt8] {
    let kept: Set<UInt32> = [Self.IHDR, Self.PLTE, Self.tRNS, Self.IDAT, Self.IEND]
    var out = Self.signature
    out.reserveCapacity(data.count)
    for chunk in chunks where kept.contains(chunk.type) {
      out.append(contentsOf: data[chunk.range])
    }
    return out
  }
}
