private import CPNG

/// What a PNG's IHDR (and chunk list) says, read without inflating anything.
public struct PNGInfo: Sendable, Equatable {
  /// PNG colour types.
  public enum ColourType: Int, Sendable {
    case gray = 0
    case rgb = 2
    case palette = 3
    case grayAlpha = 4
    case rgba = 6
  }

  /// Width from IHDR.
  public var width: Int
  /// Height from IHDR.
  public var height: Int
  /// Bits per sample (1, 2, 4, 8 or 16).
  public var bitDepth: Int
  /// Colour type from IHDR.
  public var colourType: ColourType
  /// Adam7 interlacing.
  public var interlaced: Bool
  /// An alpha channel or a tRNS chunk.
  public var hasTransparency: Bool
  /// An iCCP chunk is present.
  public var hasICCProfile: Bool
  /// An eXIf chunk is present.
  public var hasEXIF: Bool
  /// An APNG (`acTL` before IDAT); `decode` returns the default (IDAT) image.
  public var isAnimated: Bool
}

/// PNG decoding through libpng's simplified `png_image_*` API (errors by return value).
public enum PNGCodec {
  static let codec = "png"

  /// Reads IHDR and the chunk list; throws for a bad signature, bad IHDR or missing IEND.
  public static func readHeader(_ data: [UInt8]) throws -> PNGInfo {
    try data.withUnsafeBytes { try header(PNGChunks($0), $0) }
  }

  /// Decodes to 8-bit gray, RGB or RGBA: gray without transparency stays gray, RGB and palette
  /// images without transparency become RGB, anything with alpha or tRNS RGBA (straight alpha;
  /// premultiplied for an Adam7 16-bit image, which is reduced to 8 bits here rather than by
  /// libpng). APNG gives its default image. Any libpng warning fails.
  /// Ancillary chunks are not given to libpng (see `iccProfile` and `exif` for those).
  public static func decode(_ data: [UInt8]) throws -> PixelBuffer {
    try data.withUnsafeBytes { try decode($0) }
  }

  /// Decodes bytes read in place (see the `[UInt8]` variant).
  public static func decode(_ data: UnsafeRawBufferPointer) throws -> PixelBuffer {
    let chunks = try PNGChunks(data)
    let info = try header(chunks, data)
    let (format, layout): (UInt32, PixelBuffer.Layout)
    switch (info.colourType, info.hasTransparency) {
    case (.gray, false): (format, layout) = (UInt32(PNG_FORMAT_GRAY), .gray)
    case (.rgb, false), (.palette, false): (format, layout) = (UInt32(PNG_FORMAT_RGB), .rgb)
    default:
      // PNG_FORMAT_RGBA is a macro of macros Swift does not import; it is exactly these flags.
      (format, layout) = (UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA), .rgba)
    }
    let rowBytes = try OutputSize.rowBytes(
      width: info.width, height: info.height, channels: layout.channels, codec: codec)
    guard rowBytes <= Int(Int32.max) else {
      throw CodecError(.tooLarge, codec: codec, "row of \(rowBytes) bytes")
    }
    // libpng 1.6's simplified reader scrambles the rows of Adam7-interlaced 16-bit images when it
    // reduces them to 8 bits (18–27 dB against the plain twin), while its 16-bit output of the
    // same files is right: those are read at 16 bits and reduced here.
    let wide = info.bitDepth == 16 && info.interlaced
    let stream = chunks.imageOnly(data)
    var image = png_image()
    image.version = UInt32(PNG_IMAGE_VERSION)
    var failure: CodecError?
    let bytes = stream.withUnsafeBytes { input -> [UInt8] in
      // libpng reads `input` during finish_read too, so both calls stay inside this closure, and
      // the header (with its CRC) is checked before the output is allocated.
      guard png_image_begin_read_from_memory(&image, input.baseAddress, input.count) != 0 else {
        failure = error(image)  // libpng has already freed the image's internals
        return []
      }
      guard Int(image.width) == info.width, Int(image.height) == info.height else {
        png_image_free(&image)
        failure = CodecError(.corrupt, codec: codec, "IHDR disagrees with libpng")
        return []
      }
      image.format = format | (wide ? UInt32(PNG_FORMAT_FLAG_LINEAR) : 0)
      // Without this flag libpng assumes 16-bit samples without gAMA/sRGB are *linear* and
      // gamma-encodes them on the way to 8 bits (too bright); like browsers, we read them as sRGB.
      // The 16-bit output keeps them as they are without it (no gAMA reaches libpng).
      if !wide { image.flags |= UInt32(PNG_IMAGE_FLAG_16BIT_sRGB) }
      // The row stride counts components, which is `rowBytes` for either sample size.
      func finish(_ out: UnsafeMutableRawPointer?) -> Bool {
        let ok = png_image_finish_read(&image, nil, out, Int32(rowBytes), nil)
        // The copy handed to libpng has no ancillary chunks, so any warning is about the pixels
        // (e.g. "Not enough image data", which libpng would otherwise pad over).
        if ok == 0 || image.warning_or_error != 0 { failure = error(image) }
        return failure == nil
      }
      guard wide else {
        return [UInt8](unsafeUninitializedCapacity: rowBytes * info.height) { out, count in
          // libpng fills every row on success; a failed decode keeps nothing (it is discarded).
          count = finish(out.baseAddress) ? out.count : 0
        }
      }
      let samples = [UInt16](unsafeUninitializedCapacity: rowBytes * info.height) { out, count in
        count = finish(out.baseAddress) ? out.count : 0
      }
      return narrowed(samples)
    }
    if let failure { throw failure }
    // libpng's 16-bit output with alpha is premultiplied.
    return PixelBuffer(
      width: info.width, height: info.height, layout: layout, bytes: bytes,
      premultiplied: wide && layout == .rgba)
  }

  /// 16-bit samples rounded to 8 bits (v · 255 / 65535).
  private static func narrowed(_ samples: [UInt16]) -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: samples.count) { out, count in
      for (i, sample) in samples.enumerated() { out[i] = UInt8((UInt32(sample) * 255 + 32_767) / 65_535) }
      count = samples.count
    }
  }

  /// The iCCP profile, inflated with at most `maxBytes` of output; nil when there is none.
  public static func iccProfile(_ data: [UInt8], maxBytes: Int = 4 << 20) throws -> [UInt8]? {
    let chunks = try data.withUnsafeBytes { try PNGChunks($0) }
    guard let chunk = chunks.first(PNGChunks.iCCP) else { return nil }
    // Profile name (1–79 bytes), NUL, compression method 0, then a zlib stream.
    let body = data[chunk.data]
    guard let nul = body.prefix(80).firstIndex(of: 0), nul + 1 < body.endIndex, body[nul + 1] == 0 else {
      throw CodecError(.corrupt, codec: codec, "malformed iCCP chunk")
    }
    return try Inflate.decompress(body[(nul + 2)...], maxOutput: maxBytes)
  }

  /// The raw TIFF-structured bytes of the eXIf chunk; nil when there is none.
  public static func exif(_ data: [UInt8]) throws -> [UInt8]? {
    try data.withUnsafeBytes { try PNGChunks($0) }.first(PNGChunks.eXIf).map { Array(data[$0.data]) }
  }

  private static func header(_ chunks: PNGChunks, _ data: UnsafeRawBufferPointer) throws -> PNGInfo {
    guard let ihdr = chunks.first(PNGChunks.IHDR), ihdr.data.count == 13 else {
      throw CodecError(.corrupt, codec: codec, "bad IHDR")
    }
    let d = Array(data[ihdr.data])
    let width = Int(d[0]) << 24 | Int(d[1]) << 16 | Int(d[2]) << 8 | Int(d[3])
    let height = Int(d[4]) << 24 | Int(d[5]) << 16 | Int(d[6]) << 8 | Int(d[7])
    guard (1...0x7FFF_FFFF).contains(width), (1...0x7FFF_FFFF).contains(height),
      let colourType = PNGInfo.ColourType(rawValue: Int(d[9])), [1, 2, 4, 8, 16].contains(d[8])
    else { throw CodecError(.corrupt, codec: codec, "bad IHDR values") }
    let types = Set(chunks.chunks.map(\.type))
    let idat = chunks.chunks.firstIndex { $0.type == PNGChunks.IDAT } ?? chunks.chunks.count
    let animated = chunks.chunks[..<idat].contains { $0.type == PNGChunks.acTL }
    return PNGInfo(
      width: width, height: height, bitDepth: Int(d[8]), colourType: colourType, interlaced: d[12] != 0,
      hasTransparency: colourType == .grayAlpha || colourType == .rgba || types.contains(PNGChunks.tRNS),
      hasICCProfile: types.contains(PNGChunks.iCCP), hasEXIF: types.contains(PNGChunks.eXIf),
      isAnimated: animated)
  }

  private static func error(_ image: png_image) -> CodecError {
    let message = withUnsafeBytes(of: image.message) { raw in
      String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
    // The chunk walk has already caught truncation before IEND; what libpng reports is corruption.
    return CodecError(.corrupt, codec: codec, message.isEmpty ? "libpng failed" : message)
  }
}
