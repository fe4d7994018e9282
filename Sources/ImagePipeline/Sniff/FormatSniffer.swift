import ImageContainers

/// An input format as recognised from its first bytes.
public enum SniffedFormat: String, Sendable, Equatable, CaseIterable {
  case jpeg, png, gif, webp, heif, avif
  /// `avis`: an AVIF image sequence (animation); not accepted.
  case avifSequence = "avif-sequence"
  /// Video: ISOBMFF (`mp4`, `mov`, `isom`, …) or Matroska/WebM (an EBML header; its doc type
  /// is the movie reader's to check).
  case video
  case pdf, svg, html, xml, tiff, bmp
  case jpegXL = "jxl"
  case empty, unknown

  /// Whether the pipeline decodes this format.
  public var isSupported: Bool {
    switch self {
    case .jpeg, .png, .gif, .webp, .heif, .avif: return true
    default: return false
    }
  }
}

/// Recognises formats by magic bytes only; the name and Content-Type of an upload never count.
public enum FormatSniffer {
  static let heifBrands: Set<FourCC> = [
    "heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "mif2", "msf1",
  ].reduce(into: []) { $0.insert(fourCC($1)) }
  static let videoBrands: Set<FourCC> = [
    "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "mp71", "avc1", "M4V ", "M4A ", "M4P ",
    "qt  ", "3gp4", "3gp5", "3gp6", "3g2a", "dash", "MSNV", "f4v ", "crx ",
  ].reduce(into: []) { $0.insert(fourCC($1)) }

  private static func fourCC(_ s: String) -> FourCC {
    let b = Array(s.utf8)
    return FourCC(b[0], b[1], b[2], b[3])
  }

  public static func sniff(_ bytes: [UInt8]) -> SniffedFormat { bytes.withUnsafeBytes { sniff($0) } }

  /// The format of bytes read in place.
  public static func sniff(_ bytes: UnsafeRawBufferPointer) -> SniffedFormat {
    let r = ByteReader(bytes)
    if bytes.isEmpty { return .empty }
    if r.matches(0, [0xFF, 0xD8, 0xFF]) { return .jpeg }
    if r.matches(0, PNGChunkReader.signature) { return .png }
    if r.matches(0, Array("GIF87a".utf8)) || r.matches(0, Array("GIF89a".utf8)) { return .gif }
    if r.matches(0, Array("RIFF".utf8)) && r.matches(8, Array("WEBP".utf8)) { return .webp }
    if r.fourCC(4) == FourCC("ftyp") { return sniffISOBMFF(r) }
    if r.matches(0, [0x1A, 0x45, 0xDF, 0xA3]) { return .video }
    if r.matches(0, Array("%PDF-".utf8)) { return .pdf }
    if r.matches(0, [0x49, 0x49, 0x2A, 0x00]) || r.matches(0, [0x4D, 0x4D, 0x00, 0x2A])
      || r.matches(0, Array("IIRO".utf8)) || r.matches(0, Array("IIU\0".utf8))
      || r.matches(0, Array("FUJIFILMCCD-RAW".utf8))
    {
      return .tiff
    }
    if r.matches(0, Array("BM".utf8)) && bytes.count >= 26 { return .bmp }
    if r.matches(0, [0xFF, 0x0A]) || r.matches(4, Array("JXL ".utf8)) { return .jpegXL }
    return sniffMarkup(bytes)
  }

  /// HEIF/AVIF by major brand first, then by compatible brands.
  static func sniffISOBMFF(_ r: ByteReader) -> SniffedFormat {
    guard let size = r.u32(0), let major = r.fourCC(8) else { return .unknown }
    var compatible: [FourCC] = []
    var p = 16
    let end = min(Int(size), r.limit)
    while p + 4 <= end, let brand = r.fourCC(p), compatible.count < 64 {
      compatible.append(brand)
      p += 4
    }
    let avif = FourCC("avif")
    let avis = FourCC("avis")
    if major == avis { return .avifSequence }
    if major == avif { return .avif }
    if heifBrands.contains(major) {
      // `mif1`/`mif2`/`msf1` are generic: the compatible brands say which codec.
      if major == FourCC("mif1") || major == FourCC("mif2") || major == FourCC("msf1") {
        if compatible.contains(avis) && major == FourCC("msf1") { return .avifSequence }
        if compatible.contains(avif)
          && !compatible.contains(where: { $0 == FourCC("heic") || $0 == FourCC("heix") })
        {
          return .avif
        }
      }
      return .heif
    }
    if compatible.contains(avis) { return .avifSequence }
    if compatible.contains(avif) { return .avif }
    if compatible.contains(where: { heifBrands.contains($0) }) { return .heif }
    return videoBrands.contains(major) || compatible.contains(where: videoBrands.contains) ? .video : .unknown
  }

  /// SVG, HTML or other XML, after an optional BOM and leading whitespace.
  static func sniffMarkup(_ bytes: UnsafeRawBufferPointer) -> SniffedFormat {
    var start = 0
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
    while start < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) { start += 1 }
    guard start < bytes.count, bytes[start] == UInt8(ascii: "<") else { return .unknown }
    let head = String(decoding: bytes[start..<min(bytes.count, start + 4096)], as: UTF8.self).lowercased()
    if head.contains("<svg") { return .svg }
    if head.hasPrefix("<!doctype html") || head.contains("<html") || head.contains("<head")
      || head.contains("<body")
    {
      return .html
    }
    if head.hasPrefix("<?xml") || head.hasPrefix("<!--") || head.hasPrefix("<!doctype") { return .xml }
    return .unknown
  }
}
