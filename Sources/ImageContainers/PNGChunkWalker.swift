/// What a PNG's chunks say, read without inflating anything.
public struct PNGChunkInfo: Sendable {
  public var width = 0
  public var height = 0
  public var bitDepth = 0
  /// IHDR colour type: 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA.
  public var colourType = 0
  public var interlaced = false
  public var hasTransparency = false
  /// `iCCP` profile name and its still-compressed (zlib) bytes.
  public var iccProfileName: String?
  public var compressedICCProfile: [UInt8]?
  /// `sRGB` chunk present (rendering intent only; colours are already sRGB).
  public var isSRGB = false
  public var exif: EXIFInfo?
  /// Total payload bytes of tEXt/zTXt/iTXt chunks (compressed sizes; never inflated here).
  public var textBytes = 0
  public var textChunks = 0
  /// `acTL` seen before the first IDAT: an animated PNG.
  public var isAnimated = false
  public var hasIDAT = false
  public var hasIEND = false
  public var crcErrors = 0
  public var metadata = MetadataInventory()

  public var hasAlphaChannel: Bool { colourType == 4 || colourType == 6 || hasTransparency }
}

/// Walks PNG chunks from the signature to IEND, checking only what fits in the data.
public enum PNGChunkWalker {
  public enum Failure: Error, Equatable {
    case notPNG
    case badIHDR
    case truncated
    case badChunk
  }

  /// Reads every chunk header; with `checkCRC` also verifies each chunk's CRC-32.
  /// A file cut short after IHDR is reported (`hasIEND == false`), not thrown, so the caller
  /// decides; a chunk length that is impossible throws.
  public static func read(_ bytes: [UInt8], checkCRC: Bool = false) throws(Failure) -> PNGChunkInfo {
    try bytes.withBytes { bytes throws(Failure) in try read(bytes, checkCRC: checkCRC) }
  }

  /// Walks the chunks of bytes read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer, checkCRC: Bool = false) throws(Failure)
    -> PNGChunkInfo
  {
    guard var chunks = PNGChunkReader(bytes) else { throw .notPNG }
    let r = ByteReader(bytes)
    var info = PNGChunkInfo()
    var first = true
    while let next = try chunks.next() {
      let (type, length, data, complete) = (next.type, next.length, next.data.lowerBound, next.isComplete)
      if first {
        guard type == FourCC("IHDR"), length == 13, complete else { throw .badIHDR }
        try readHeader(r, at: data, into: &info)
        first = false
      }
      if checkCRC, complete, let stored = r.u32(data + length),
        CRC32.checksum(bytes[(next.offset + 4)..<(data + length)]) != stored
      {
        info.crcErrors += 1
      }
      let chunk = ByteReader(bytes, start: data, limit: min(data + length, bytes.count))
      switch type {
      case FourCC("IDAT"): info.hasIDAT = true
      case FourCC("IEND"): info.hasIEND = true
      case FourCC("tRNS"): info.hasTransparency = true
      case FourCC("sRGB"): info.isSRGB = true
      case FourCC("acTL"): if !info.hasIDAT { info.isAnimated = true }
      case FourCC("tEXt"), FourCC("zTXt"), FourCC("iTXt"):
        info.textChunks += 1
        info.textBytes += length
        info.metadata.text = true
        if chunk.matches(data, Array("XML:com.adobe.xmp".utf8)) { info.metadata.xmp = true }
        if chunk.matches(data, Array("Raw profile type exif".utf8)) { info.metadata.exif = true }
      case FourCC("iCCP"):
        info.metadata.iccProfile = true
        if complete, info.compressedICCProfile == nil,
          let nameEnd = chunk.nulTerminator(from: data, end: data + 80),
          let profile = chunk.slice(nameEnd + 2, data + length - nameEnd - 2)
        {
          info.iccProfileName = String(decoding: bytes[data..<nameEnd], as: UTF8.self)
          info.compressedICCProfile = Array(profile)
        }
      case FourCC("eXIf"):
        info.metadata.exif = true
        if complete, info.exif == nil, let exif = EXIFReader.read(chunk) {
          info.exif = exif
          info.metadata.absorb(exif)
        }
      case FourCC("tIME"), FourCC("pHYs"), FourCC("gAMA"), FourCC("cHRM"), FourCC("bKGD"), FourCC("sBIT"),
        FourCC("PLTE"), FourCC("IHDR"), FourCC("hIST"), FourCC("sPLT"), FourCC("fcTL"), FourCC("fdAT"):
        break
      default:
        info.metadata.otherSegments = true
      }
    }
    if first { throw .badIHDR }
    return info
  }

  private static func readHeader(_ r: ByteReader, at p: Int, into info: inout PNGChunkInfo) throws(Failure) {
    guard let w = r.u32(p), let h = r.u32(p + 4), let depth = r.u8(p + 8), let colour = r.u8(p + 9),
      let interlace = r.u8(p + 12), w > 0, h > 0, w <= 0x7FFF_FFFF, h <= 0x7FFF_FFFF
    else { throw .badIHDR }
    info.width = Int(w)
    info.height = Int(h)
    info.bitDepth = Int(depth)
    info.colourType = Int(colour)
    info.interlaced = interlace == 1
  }
}

/// CRC-32 (ISO 3309, as PNG uses it), table-driven.
package enum CRC32 {
  static let table: [UInt32] = (0..<256).map { n in
    var c = UInt32(n)
    for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
    return c
  }

  package static func checksum<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    table.withUnsafeBufferPointer { t in
      for byte in bytes { crc = t[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    }
    return crc ^ 0xFFFF_FFFF
  }
}
