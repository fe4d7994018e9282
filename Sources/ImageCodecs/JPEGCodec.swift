private import CTurboJPEG

/// What a JPEG header says, read without decoding pixels.
public struct JPEGInfo: Sendable, Equatable {
  /// Chroma subsampling of the stored components.
  public enum Subsampling: Sendable, Equatable {
    case s444, s422, s420, gray, s440, s411
  }
  /// Colour space of the stored components (YCCK is Adobe's YCbCr-coded CMYK).
  public enum ColourSpace: Sendable, Equatable {
    case rgb, ycbcr, gray, cmyk, ycck
  }
  /// How the scan data is coded (from the SOF marker).
  public enum Process: Sendable, Equatable {
    case baseline, extended, progressive, arithmetic, lossless, other
  }

  /// Stored width in pixels.
  public var width: Int
  /// Stored height in pixels.
  public var height: Int
  /// Chroma subsampling (decides the MCU size).
  public var subsampling: Subsampling
  /// Colour space of the components.
  public var colourSpace: ColourSpace
  /// Bits per sample (8; 12 is rejected by `decode`).
  public var precision: Int
  /// Coding process from the SOF marker.
  public var process: Process
  /// Whether an Adobe APP14 marker is present (CMYK samples are then stored inverted).
  public var hasAdobeMarker: Bool

  /// Creates header facts (for tests and callers that parsed the header themselves).
  public init(
    width: Int, height: Int, subsampling: Subsampling, colourSpace: ColourSpace, precision: Int = 8,
    process: Process = .baseline, hasAdobeMarker: Bool = false
  ) {
    self.width = width
    self.height = height
    self.subsampling = subsampling
    self.colourSpace = colourSpace
    self.precision = precision
    self.process = process
    self.hasAdobeMarker = hasAdobeMarker
  }

  /// Whether the stored components are CMYK or YCCK.
  public var isCMYK: Bool { colourSpace == .cmyk || colourSpace == .ycck }

  /// The MCU size in pixels, which decides whether a lossless transform is perfect.
  public var mcuSize: (width: Int, height: Int) {
    switch subsampling {
    case .s444, .gray: (8, 8)
    case .s422: (16, 8)
    case .s420: (16, 16)
    case .s440: (8, 16)
    case .s411: (32, 8)
    }
  }
}

/// JPEG decode, encode and lossless transform through TurboJPEG 2.1's `tj*` API.
public enum JPEGCodec {
  static let codec = "jpeg"

  /// Reads dimensions, subsampling, colour space and precision without decoding pixels.
  public static func readHeader(_ data: [UInt8]) throws -> JPEGInfo {
    try data.withUnsafeBytes { try readHeader($0) }
  }

  /// Reads the header of bytes read in place.
  public static func readHeader(_ data: UnsafeRawBufferPointer) throws -> JPEGInfo {
    let markers = JPEGMarkers(data)
    // TurboJPEG 2.1 fails on 12-bit data with a generic error; answer "unsupported" from the SOF.
    if let precision = markers.precision, precision != 8 {
      throw CodecError(.unsupported, codec: codec, "\(precision)-bit sample precision")
    }
    if markers.frameMarker == 0xC3 || markers.frameMarker == 0xCB {
      throw CodecError(.unsupported, codec: codec, "lossless JPEG")
    }
    let handle = try TJHandle(decompress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var width: Int32 = 0
    var height: Int32 = 0
    var subsamp: Int32 = 0
    var colourspace: Int32 = 0
    let status = data.withUnsafeBufferPointer { buffer in
      tjDecompressHeader3(
        handle.raw, buffer.baseAddress, UInt(buffer.count), &width, &height, &subsamp, &colourspace)
    }
    // libjpeg warns about stray bytes between the header segments and still reads the header: the
    // decode judges such warnings (`JPEGRecovery`).
    if status != 0, !handle.stoppedAtWarning { throw handle.error(data, context: "header") }
    guard width > 0, height > 0 else {
      throw CodecError(.corrupt, codec: codec, "zero dimension \(width)x\(height)")
    }
    return JPEGInfo(
      width: Int(width), height: Int(height), subsampling: try subsampling(subsamp),
      colourSpace: colourSpace(colourspace), precision: markers.precision ?? 8,
      process: process(markers.frameMarker), hasAdobeMarker: markers.hasAdobeMarker)
  }

  /// The embedded ICC profile reassembled from APP2 chunks, nil when there is none.
  public static func iccProfile(_ data: [UInt8]) -> [UInt8]? {
    data.withUnsafeBytes { JPEGMarkers($0).iccProfile($0) }
  }

  /// The decoded size for a target: the smallest M/8 DCT scale whose result is still ≥ the target
  /// in both dimensions (full size when `target` is nil or not smaller).
  public static func scaledSize(
    width: Int, height: Int, toAtLeast target: (width: Int, height: Int)?
  ) -> (width: Int, height: Int) {
    guard let target else { return (width, height) }
    var count: Int32 = 0
    guard let factors = tjGetScalingFactors(&count) else { return (width, height) }
    var best = (width: width, height: height)
    for factor in UnsafeBufferPointer(start: factors, count: Int(count)) where factor.num <= factor.denom {
      let w = (width * Int(factor.num) + Int(factor.denom) - 1) / Int(factor.denom)
      let h = (height * Int(factor.num) + Int(factor.denom) - 1) / Int(factor.denom)
      if w >= target.width, h >= target.height, w * h < best.width * best.height {
        best = (w, h)
      }
    }
    return best
  }

  /// Decodes to 8-bit RGB (gray stays gray), shrinking on load to the smallest DCT scale still
  /// ≥ `scaleToAtLeast`. CMYK/YCCK is converted to RGB through `iccProfile` when it is a CMYK
  /// profile (else by formula); RGB and gray profiles are not applied here (see `ColourTransform`).
  /// libjpeg warnings are judged by `JPEGRecovery` (truncated or damaged scans fail the decode).
  public static func decode(
    _ data: [UInt8], scaleToAtLeast target: (width: Int, height: Int)? = nil, iccProfile: [UInt8]? = nil
  ) throws -> PixelBuffer {
    try data.withUnsafeBytes { try decode($0, scaleToAtLeast: target, iccProfile: iccProfile) }
  }

  /// Decodes bytes read in place (see the `[UInt8]` variant).
  public static func decode(
    _ data: UnsafeRawBufferPointer, scaleToAtLeast target: (width: Int, height: Int)? = nil,
    iccProfile: [UInt8]? = nil
  ) throws -> PixelBuffer {
    let info = try readHeader(data)
    let size = scaledSize(width: info.width, height: info.height, toAtLeast: target)
    let format: TJPF
    let layout: PixelBuffer.Layout
    switch info.colourSpace {
    case .gray: (format, layout) = (TJPF_GRAY, .gray)
    case .cmyk, .ycck: (format, layout) = (TJPF_CMYK, .rgba)  // four bytes per pixel, converted below
    case .rgb, .ycbcr: (format, layout) = (TJPF_RGB, .rgb)
    }
    let rowBytes = try OutputSize.rowBytes(
      width: size.width, height: size.height, channels: layout.channels, codec: codec)
    let handle = try TJHandle(decompress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    // Strict first, then `JPEGRecovery`'s rule: a truncated or damaged scan is an error, never
    // grey padding. LIMITSCANS refuses progressive files with absurd scan counts (CPU bomb).
    let bytes = try [UInt8](unsafeUninitializedCapacity: rowBytes * size.height) { out, count in
      // A failed decode leaves the buffer partly written: keep none of it (it is discarded).
      count = 0
      try JPEGRecovery.run(data, handle: handle, context: "decode") { flags in
        data.withUnsafeBufferPointer { input in
          tjDecompress2(
            handle.raw, input.baseAddress, UInt(input.count), out.baseAddress, Int32(size.width),
            Int32(rowBytes), Int32(size.height), Int32(format.rawValue), flags)
        }
      }
      count = out.count
    }
    let buffer = PixelBuffer(width: size.width, height: size.height, layout: layout, bytes: bytes)
    guard info.isCMYK else { return buffer }
    return try CMYKConversion.toRGB(buffer, profile: iccProfile)
  }

  private static func subsampling(_ value: Int32) throws -> JPEGInfo.Subsampling {
    switch UInt32(bitPattern: value) {
    case TJSAMP_444.rawValue: .s444
    case TJSAMP_422.rawValue: .s422
    case TJSAMP_420.rawValue: .s420
    case TJSAMP_GRAY.rawValue: .gray
    case TJSAMP_440.rawValue: .s440
    case TJSAMP_411.rawValue: .s411
    default: throw CodecError(.unsupported, codec: codec, "unknown chroma subsampling \(value)")
    }
  }

  private static func colourSpace(_ value: Int32) -> JPEGInfo.ColourSpace {
    switch UInt32(bitPattern: value) {
    case TJCS_RGB.rawValue: .rgb
    case TJCS_GRAY.rawValue: .gray
    case TJCS_CMYK.rawValue: .cmyk
    case TJCS_YCCK.rawValue: .ycck
    default: .ycbcr
    }
  }

  private static func process(_ marker: UInt8?) -> JPEGInfo.Process {
    switch marker {
    case 0xC0: .baseline
    case 0xC1: .extended
    case 0xC2: .progressive
    case 0xC3, 0xCB: .lossless
    case 0xC9, 0xCA: .arithmetic
    default: .other
    }
  }
}

/// Owns one TurboJPEG handle; `deinit` destroys it.
final class TJHandle {
  let raw: UnsafeMutableRawPointer

  init(decompress: Void) throws {
    guard let raw = tjInitDecompress() else { throw TJHandle.initError() }
    self.raw = raw
  }

  init(compress: Void) throws {
    guard let raw = tjInitCompress() else { throw TJHandle.initError() }
    self.raw = raw
  }

  init(transform: Void) throws {
    guard let raw = tjInitTransform() else { throw TJHandle.initError() }
    self.raw = raw
  }

  deinit { tjDestroy(raw) }

  private static func initError() -> CodecError {
    CodecError(.internal, codec: JPEGCodec.codec, "tjInit failed: \(String(cString: tjGetErrorStr2(nil)))")
  }

  /// The handle's last error as a CodecError. The kind is decided from the bytes, not the message:
  /// a failure on a file that does not end in EOI is a truncation, otherwise the data is corrupt.
  func error(_ data: UnsafeRawBufferPointer, context: String) -> CodecError {
    let message = "\(context): " + String(cString: tjGetErrorStr2(raw))
    let endsWithEOI = data.count >= 2 && data[data.count - 2] == 0xFF && data[data.count - 1] == 0xD9
    return CodecError(endsWithEOI ? .corrupt : .truncated, codec: JPEGCodec.codec, message)
  }
}
