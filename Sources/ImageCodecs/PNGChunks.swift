import ImageContainers

/// The chunks of a whole PNG, from the signature to IEND, for the codec: a file cut before IEND
/// is refused here (the header walker in ImageContainers reports it instead).
struct PNGChunks {
  static let IHDR = FourCC("IHDR")
  static let PLTE = FourCC("PLTE")
  static let IDAT = FourCC("IDAT")
  static let IEND = FourCC("IEND")
  static let tRNS = FourCC("tRNS")
  static let iCCP = FourCC("iCCP")
  static let eXIf = FourCC("eXIf")
  static let acTL = FourCC("acTL")

  var chunks: [PNGChunk] = []

  /// Walks `data`; throws `.corrupt` for a bad signature or chunk length, `.truncated` when the
  /// data ends before IEND.
  init(_ data: UnsafeRawBufferPointer) throws {
    guard var reader = PNGChunkReader(data) else { throw CodecError(.corrupt, codec: "png", "bad signature") }
    while true {
      let next: PNGChunk?
      do { next = try reader.next() } catch {
        throw CodecError(.corrupt, codec: "png", "chunk length over 2^31 - 1")
      }
      guard let chunk = next else {
        throw CodecError(.truncated, codec: "png", "data ends at \(data.count) before IEND")
      }
      guard chunk.isComplete else {
        throw CodecError(.truncated, codec: "png", "chunk at \(chunk.offset) runs past the end")
      }
      if chunks.isEmpty, chunk.type != Self.IHDR {
        throw CodecError(.corrupt, codec: "png", "first chunk is not IHDR")
      }
      chunks.append(chunk)
      if chunk.type == Self.IEND { return }
    }
  }

  /// The first chunk of `type`.
  func first(_ type: FourCC) -> PNGChunk? { chunks.first { $0.type == type } }

  /// A copy of the stream holding only the chunks libpng needs to draw the image (IHDR, PLTE,
  /// tRNS, IDAT, IEND). Dropping the rest means text chunks are never inflated (zTXt bombs),
  /// colour chunks are handled by us (iCCP) or ignored like browsers do (gAMA, cHRM), APNG
  /// chunks leave the default image, and any libpng warning left can only be about the image.
  func imageOnly(_ data: UnsafeRawBufferPointer) -> [UInt8] {
    let kept: Set<FourCC> = [Self.IHDR, Self.PLTE, Self.tRNS, Self.IDAT, Self.IEND]
    var out = PNGChunkReader.signature
    out.reserveCapacity(data.count)
    for chunk in chunks where kept.contains(chunk.type) {
      out.append(contentsOf: data[chunk.range])
    }
    return out
  }
}
