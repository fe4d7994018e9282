private import CHeif
private import DelayLoadHeif

/// The colour description of a HEIF image: an ICC profile, an nclx box, both or neither.
public struct HEIFColour: Sendable, Equatable {
  /// Raw ICC bytes (`prof` or `rICC`), when present.
  public var iccProfile: [UInt8]?
  /// The nclx colour box, when present.
  public var nclx: NCLXColour?
}

/// What a HEIF/AVIF file's primary image is, read without decoding pixels.
public struct HEIFInfo: Sendable, Equatable {
  /// The size libheif 1.15 reports for the handle. It applies `clap`/`irot` only when those
  /// properties come after `ispe` in the file (a libheif quirk), so it is not a reliable display
  /// size: `decode` sets it to the decoded size; before decoding, use `storedWidth/Height` and the
  /// transforms from the box reader.
  public var width: Int
  /// See `width`.
  public var height: Int
  /// Width as stored (`ispe`), before transformations.
  public var storedWidth: Int
  /// Height as stored (`ispe`), before transformations.
  public var storedHeight: Int
  /// Whether an alpha auxiliary image is attached.
  public var hasAlpha: Bool
  /// Whether the alpha channel is marked premultiplied (`prem` reference).
  public var premultipliedAlpha: Bool
  /// Luma bits per sample (8, 10, 12).
  public var bitDepth: Int
  /// Number of top-level images in the file (only the primary is ever decoded).
  public var topLevelImageCount: Int
  /// The primary image's ICC profile and/or nclx box.
  public var colour: HEIFColour
}

/// A decoded HEIF/AVIF primary image.
public struct HEIFImage: Sendable {
  /// 8-bit interleaved RGB, or RGBA (straight or premultiplied as `pixels.premultiplied` says).
  public var pixels: PixelBuffer
  /// The primary image's facts, with `width`/`height` set to the decoded size.
  public var info: HEIFInfo
}

/// HEIC/HEIF/AVIF decoding of the primary image through libheif 1.15.
public enum HEIFCodec {
  static let codec = "heif"

  /// Decoder settings.
  public struct Options: Sendable {
    /// Return the stored pixels without applying clap/irot/imir.
    public var ignoreTransformations = false
    /// Threads libheif may use for one image (grid tiles decode in parallel).
    public var decodingThreads = 2
    /// Largest width or height libheif accepts, checked from `ispe` before decoding. libheif 1.15's
    /// own default (32768) lets a 17000×17000 AVIF through to a 17 s decode; 16384 refuses it and
    /// still admits the 16320×12240 Samsung 200 MP photo. The pipeline's pixel limit comes first.
    public var maximumDimension = 16_384
    /// The image is one plane of grey (the caller read it from `av1C`/`hvcC`; libheif 1.15 cannot
    /// say): it is decoded as grey and brought to full range here (see `decode`).
    public var monochrome = false

    /// Creates decoder settings.
    public init(
      ignoreTransformations: Bool = false, decodingThreads: Int = 2, maximumDimension: Int = 16_384,
      monochrome: Bool = false
    ) {
      self.ignoreTransformations = ignoreTransformations
      self.decodingThreads = decodingThreads
      self.maximumDimension = maximumDimension
      self.monochrome = monochrome
    }
  }

  /// Reads the primary image's size, alpha, depth and colour without decoding pixels.
  public static func primaryInfo(_ data: [UInt8], options: Options = Options()) throws -> HEIFInfo {
    try data.withUnsafeBytes { try primaryInfo($0, options: options) }
  }

  /// The primary image's facts from bytes read in place.
  public static func primaryInfo(_ data: UnsafeRawBufferPointer, options: Options = Options()) throws
    -> HEIFInfo
  {
    try withPrimary(data, options: options) { handle, context in
      try info(handle, context: context)
    }
  }

  /// Decodes the primary image only (thumbnails, depth, gain maps and other items are ignored) to
  /// 8-bit RGB or RGBA, applying the file's transformations unless told to ignore them; a
  /// monochrome image (`Options.monochrome`) to 8-bit full-range gray (RGBA with alpha).
  ///
  /// Why monochrome is decoded apart: libheif 1.15 copies a monochrome plane into R, G and B as it
  /// is, in video range too (16…235 came out as 16 + 0.86·Y: grey and flat), and its 8-bit
  /// conversion does not apply to it. Asked for monochrome, it returns the plane as coded, at its
  /// depth; `HEIFDecodedImage.gray` scales it to full-range 8 bits by the nclx range.
  ///
  /// Why RGB and not YCbCr planes (as JPEG uses, see `YCbCrPlanes`): libheif 1.15 assembles a
  /// grid image (every phone HEIC) as planar RGB 4:4:4, converting each tile while pasting it,
  /// whatever output is asked for; its native format (`heif_colorspace_undefined`) comes back
  /// as RGB 4:4:4 too. Asking for YCbCr 4:2:0 only adds an RGB→YCbCr pass: measured with
  /// callgrind on the iPhone XS photo, 5.34 G → 5.80 G instructions. Skipping the per-tile
  /// conversion (1.1 G) needs the tiles decoded one by one, which libheif 1.15's API does not
  /// offer (tiles are hidden items).
  public static func decode(_ data: [UInt8], options: Options = Options()) throws -> HEIFImage {
    try data.withUnsafeBytes { try decode($0, options: options) }
  }

  /// Decodes bytes read in place (see the `[UInt8]` variant).
  public static func decode(_ data: UnsafeRawBufferPointer, options: Options = Options()) throws -> HEIFImage
  {
    try withPrimary(data, options: options) { handle, context in
      var info = try info(handle, context: context)
      guard let decodeOptions = heif_decoding_options_alloc() else {
        throw CodecError(.internal, codec: codec, "heif_decoding_options_alloc failed")
      }
      defer { heif_decoding_options_free(decodeOptions) }
      decodeOptions.pointee.ignore_transformations = options.ignoreTransformations ? 1 : 0
      decodeOptions.pointee.convert_hdr_to_8bit = 1
      let (space, chroma) =
        options.monochrome
        ? (heif_colorspace_monochrome, heif_chroma_monochrome)
        : (heif_colorspace_RGB, info.hasAlpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB)
      var image: OpaquePointer? = nil
      try check(heif_decode_image(handle.raw, &image, space, chroma, decodeOptions))
      guard let image else { throw CodecError(.internal, codec: codec, "no image decoded") }
      let decoded = HEIFDecodedImage(image)
      // The decoded image says whether its colour is premultiplied (the handle's `prem` flag is
      // what the file declares; the image is what we actually hold).
      let premultiplied = heif_image_is_premultiplied_alpha(image) != 0
      let pixels =
        try options.monochrome
        ? decoded.gray(premultiplied: premultiplied)
        : decoded.pixels(layout: info.hasAlpha ? .rgba : .rgb, premultiplied: premultiplied)
      info.width = pixels.width
      info.height = pixels.height
      return HEIFImage(pixels: pixels, info: info)
    }
  }

  /// Opens `data` in memory (without copying) and hands the primary image handle to `body`.
  private static func withPrimary<T>(
    _ data: UnsafeRawBufferPointer, options: Options, _ body: (ImageHandle, Context) throws -> T
  ) throws -> T {
    if let failure = libraryFailure { throw CodecError(.internal, codec: codec, failure) }
    _ = initialised
    guard data.count >= 12 else { throw CodecError(.truncated, codec: codec, "\(data.count) bytes") }
    return try data.withUnsafeBytes { bytes in
      // The context reads `bytes` in place, so it must not outlive this closure: it is local.
      let context = try Context()
      heif_context_set_maximum_image_size_limit(context.raw, Int32(clamping: options.maximumDimension))
      heif_context_set_max_decoding_threads(context.raw, Int32(clamping: max(1, options.decodingThreads)))
      try check(heif_context_read_from_memory_without_copy(context.raw, bytes.baseAddress, bytes.count, nil))
      var raw: OpaquePointer? = nil
      try check(heif_context_get_primary_image_handle(context.raw, &raw))
      guard let raw else { throw CodecError(.corrupt, codec: codec, "no primary image") }
      let handle = ImageHandle(raw)
      return try body(handle, context)
    }
  }

  private static func info(_ handle: ImageHandle, context: Context) throws -> HEIFInfo {
    let h = handle.raw
    let width = Int(heif_image_handle_get_width(h))
    let height = Int(heif_image_handle_get_height(h))
    guard width > 0, height > 0 else {
      throw CodecError(.corrupt, codec: codec, "primary image is \(width)x\(height)")
    }
    return HEIFInfo(
      width: width, height: height,
      storedWidth: Int(heif_image_handle_get_ispe_width(h)),
      storedHeight: Int(heif_image_handle_get_ispe_height(h)),
      hasAlpha: heif_image_handle_has_alpha_channel(h) != 0,
      premultipliedAlpha: heif_image_handle_is_premultiplied_alpha(h) != 0,
      bitDepth: Int(heif_image_handle_get_luma_bits_per_pixel(h)),
      topLevelImageCount: Int(heif_context_get_number_of_top_level_images(context.raw)),
      colour: colour(h))
  }

  private static func colour(_ h: OpaquePointer) -> HEIFColour {
    var colour = HEIFColour()
    let size = heif_image_handle_get_raw_color_profile_size(h)
    if size > 0 {
      var icc = [UInt8](repeating: 0, count: size)
      let error = icc.withUnsafeMutableBytes { heif_image_handle_get_raw_color_profile(h, $0.baseAddress) }
      if error.code == heif_error_Ok { colour.iccProfile = icc }
    }
    var nclx: UnsafeMutablePointer<heif_color_profile_nclx>? = nil
    let error = heif_image_handle_get_nclx_color_profile(h, &nclx)
    if error.code == heif_error_Ok, let nclx {
      defer { heif_nclx_color_profile_free(nclx) }
      colour.nclx = NCLXColour(
        colourPrimaries: Int(nclx.pointee.color_primaries.rawValue),
        transferCharacteristics: Int(nclx.pointee.transfer_characteristics.rawValue),
        matrixCoefficients: Int(nclx.pointee.matrix_coefficients.rawValue),
        fullRange: nclx.pointee.full_range_flag != 0)
    }
    return colour
  }

  /// Maps a libheif error to a CodecError by its codes; the message is kept for logs only.
  fileprivate static func check(_ error: heif_error) throws {
    guard error.code != heif_error_Ok else { return }
    let message = error.message.map { String(cString: $0) } ?? "code \(error.code.rawValue)"
    let kind: CodecError.Kind
    switch (error.code, error.subcode) {
    case (_, heif_suberror_Security_limit_exceeded): kind = .tooLarge
    case (_, heif_suberror_End_of_data): kind = .truncated
    case (heif_error_Unsupported_filetype, _), (heif_error_Unsupported_feature, _): kind = .unsupported
    case (heif_error_Memory_allocation_error, _), (heif_error_Usage_error, _): kind = .internal
    default: kind = .corrupt
    }
    throw CodecError(kind, codec: codec, message)
  }

  /// Why libheif could not be opened (DelayLoadHeif opens it on this first use), or nil.
  private static let libraryFailure: String? = DelayLoad_heif().map { String(cString: $0) }
  private static let initialised: Void = { _ = heif_init(nil) }()

  /// Opens and initialises libheif now (its plugins scanned), instead of at the first decode;
  /// why it could not be opened, or nil.
  static func preload() -> String? {
    guard libraryFailure == nil else { return libraryFailure }
    _ = initialised
    return nil
  }
}

/// Owns one heif_context; `deinit` frees it.
private final class Context {
  let raw: OpaquePointer
  init() throws {
    guard let raw = heif_context_alloc() else {
      throw CodecError(.internal, codec: HEIFCodec.codec, "heif_context_alloc failed")
    }
    self.raw = raw
  }
  deinit { heif_context_free(raw) }
}

/// Owns one heif_image_handle; `deinit` releases it.
private final class ImageHandle {
  let raw: OpaquePointer
  init(_ raw: OpaquePointer) { self.raw = raw }
  deinit { heif_image_handle_release(raw) }
}

/// Owns one decoded heif_image; `deinit` releases it.
final class HEIFDecodedImage {
  let raw: OpaquePointer
  init(_ raw: OpaquePointer) { self.raw = raw }
  deinit { heif_image_release(raw) }

  /// Copies the interleaved plane into a tightly packed PixelBuffer (one pass, row by row).
  func pixels(layout: PixelBuffer.Layout, premultiplied: Bool) throws -> PixelBuffer {
    let width = Int(heif_image_get_width(raw, heif_channel_interleaved))
    let height = Int(heif_image_get_height(raw, heif_channel_interleaved))
    let bits = heif_image_get_bits_per_pixel_range(raw, heif_channel_interleaved)
    var stride: Int32 = 0
    guard width > 0, height > 0, bits == 8,
      let plane = heif_image_get_plane_readonly(raw, heif_channel_interleaved, &stride)
    else {
      throw CodecError(
        .internal, codec: HEIFCodec.codec, "unexpected decoded plane \(width)x\(height) \(bits)-bit")
    }
    let rowBytes = width * layout.channels
    let bytes = [UInt8](unsafeUninitializedCapacity: rowBytes * height) { out, count in
      for y in 0..<height {
        (out.baseAddress! + y * rowBytes).update(from: plane + y * Int(stride), count: rowBytes)
      }
      count = rowBytes * height
    }
    return PixelBuffer(
      width: width, height: height, layout: layout, bytes: bytes,
      premultiplied: premultiplied && layout == .rgba)
  }
}
