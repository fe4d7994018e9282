/// What a WebP's RIFF chunks say.
public struct WebPChunkInfo: Sendable {
  public var width = 0
  public var height = 0
  /// `VP8L` bitstream (lossless) as the image (or first frame's) data.
  public var isLossless = false
  public var hasAlpha = false
  public var isAnimated = false
  public var iccProfile: [UInt8]?
  public var exif: EXIFInfo?
  /// RIFF size field larger than the data: the file was cut short.
  public var isTruncated = false
  public var metadata = MetadataInventory()
}

/// Reads the RIFF/WEBP chunk list: VP8/VP8L/VP8X canvas sizes and the ICCP/EXIF/XMP chunks.
public enum WebPReader {
  public enum Failure: Error, Equatable {
    case notWebP
    case noImage
  }

  public static func read(_ bytes: [UInt8]) throws(Failure) -> WebPChunkInfo {
    try bytes.withBytes { bytes throws(Failure) in try read(bytes) }
  }

  /// Reads the chunks of bytes read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> WebPChunkInfo {
    let r = ByteReader(bytes, littleEndian: true)
    guard r.matches(0, Array("RIFF".utf8)), r.matches(8, Array("WEBP".utf8)), let riffSize = r.u32(4) else {
      throw .notWebP
    }
    var info = WebPChunkInfo()
    let declaredEnd = UInt64(riffSize) + 8
    info.isTruncated = declaredEnd > UInt64(bytes.count)
    let end = Int(min(declaredEnd, UInt64(bytes.count)))
    var offset = 12
    var sawImage = false
    while offset + 8 <= end, let type = r.fourCC(offset), let size32 = r.u32(offset + 4) {
      let size = Int(size32)
      let data = offset + 8
      let complete = r.has(data, size) && data + size <= end
      let chunk = ByteReader(bytes, littleEndian: true, start: data, limit: min(data + size, end))
      switch type {
      case FourCC("VP8X"):
        if let flags = chunk.u8(data), let w = chunk.u24(data + 4), let h = chunk.u24(data + 7) {
          info.width = Int(w) + 1
          info.height = Int(h) + 1
          info.hasAlpha = flags & 0x10 != 0
          info.isAnimated = flags & 0x02 != 0
          sawImage = sawImage || info.isAnimated
        }
      case FourCC("VP8 "):
        // Frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height.
        if !sawImage, chunk.matches(data + 3, [0x9D, 0x01, 0x2A]), let w = chunk.u16(data + 6),
          let h = chunk.u16(data + 8)
        {
          if info.width == 0 {
            info.width = Int(w & 0x3FFF)
            info.height = Int(h & 0x3FFF)
          }
          sawImage = true
        }
      case FourCC("VP8L"):
        if !sawImage, chunk.u8(data) == 0x2F, let bits = chunk.u32(data + 1) {
          if info.width == 0 {
            info.width = Int(bits & 0x3FFF) + 1
            info.height = Int((bits >> 14) & 0x3FFF) + 1
          }
          info.hasAlpha = info.hasAlpha || (bits >> 28) & 1 == 1
          info.isLossless = true
          sawImage = true
        }
      case FourCC("ALPH"): info.hasAlpha = true
      case FourCC("ANIM"): info.isAnimated = true
      case FourCC("ANMF"):
        info.isAnimated = true
        // The first frame's bitstream decides lossless or lossy (16-byte frame header first).
        if !sawImage, let inner = chunk.fourCC(data + 16) {
          info.isLossless = inner == FourCC("VP8L")
          sawImage = true
        }
      case FourCC("ICCP"):
        info.metadata.iccProfile = true
        if complete, let profile = chunk.slice(data, size) { info.iccProfile = Array(profile) }
      case FourCC("EXIF"):
        info.metadata.exif = true
        if complete, let exif = EXIFReader.read(chunk) {
          info.exif = exif
          info.metadata.absorb(exif)
        }
      case FourCC("XMP "): info.metadata.xmp = true
      default: info.metadata.otherSegments = true
      }
      guard complete else { break }
      offset = data + size + (size & 1)
    }
    guard sawImage, info.width > 0, info.height > 0 else { throw .noImage }
    return info
  }
}
