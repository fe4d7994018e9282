private import CWebP

/// What a WebP header says, read without decoding pixels.
public struct WebPInfo: Sendable, Equatable {
  /// Canvas width for animations, image width otherwise.
  public var width: Int
  /// Canvas height for animations, image height otherwise.
  public var height: Int
  /// Whether any alpha is present (ALPH chunk, VP8L alpha or animation).
  public var hasAlpha: Bool
  /// Whether the file is an animation (`decode` returns the first frame).
  public var isAnimated: Bool
  /// VP8L (lossless) bitstream: screenshots and graphics; encode those 4:4:4.
  public var isLossless: Bool
}

/// WebP decoding through libwebp (stills) and libwebpdemux (animations, metadata chunks).
public enum WebPCodec {
  static let codec = "webp"

  /// Reads size, alpha, animation and lossless-ness from the headers.
  public static func readHeader(_ data: [UInt8]) throws -> WebPInfo {
    try data.withUnsafeBytes { try readHeader($0) }
  }

  /// Reads the header of bytes read in place.
  public static func readHeader(_ data: UnsafeRawBufferPointer) throws -> WebPInfo {
    var features = WebPBitstreamFeatures()
    let status = data.withUnsafeBufferPointer { WebPGetFeatures($0.baseAddress, $0.count, &features) }
    try check(status, data, "header")
    guard features.width > 0, features.height > 0 else {
      throw CodecError(.corrupt, codec: codec, "zero size")
    }
    return WebPInfo(
      width: Int(features.width), height: Int(features.height), hasAlpha: features.has_alpha != 0,
      isAnimated: features.has_animation != 0, isLossless: features.format == 2)
  }

  /// Decodes to 8-bit RGB, or RGBA with straight alpha when the image has alpha. An animation
  /// gives its first frame composited onto the canvas (RGBA). A truncated file fails.
  public static func decode(_ data: [UInt8]) throws -> PixelBuffer {
    try data.withUnsafeBytes { try decode($0) }
  }

  /// Decodes bytes read in place (see the `[UInt8]` variant).
  public static func decode(_ data: UnsafeRawBufferPointer) throws -> PixelBuffer {
    let info = try readHeader(data)
    if info.isAnimated { return try firstFrame(data) }
    let layout: PixelBuffer.Layout = info.hasAlpha ? .rgba : .rgb
    let rowBytes = try OutputSize.rowBytes(
      width: info.width, height: info.height, channels: layout.channels, codec: codec)
    var config = WebPDecoderConfig()
    guard WebPInitDecoderConfig(&config) != 0 else {
      throw CodecError(.internal, codec: codec, "WebPInitDecoderConfig: ABI mismatch")
    }
    var status = VP8_STATUS_OK
    let bytes = [UInt8](unsafeUninitializedCapacity: rowBytes * info.height) { out, count in
      // Decode straight into our storage: libwebp writes through the external-memory buffer.
      config.output.colorspace = info.hasAlpha ? MODE_RGBA : MODE_RGB
      config.output.is_external_memory = 1
      config.output.u.RGBA.rgba = out.baseAddress
      config.output.u.RGBA.stride = Int32(rowBytes)
      config.output.u.RGBA.size = out.count
      status = data.withUnsafeBufferPointer { WebPDecode($0.baseAddress, $0.count, &config) }
      WebPFreeDecBuffer(&config.output)  // frees nothing of ours (external memory); pairs the API
      // libwebp fills every row on success; a failed decode keeps nothing (it is discarded).
      count = status == VP8_STATUS_OK ? out.count : 0
    }
    try check(status, data, "decode")
    return PixelBuffer(width: info.width, height: info.height, layout: layout, bytes: bytes)
  }

  /// The ICCP and EXIF chunk payloads (nil when absent). Needs a complete, well-formed file.
  public static func metadata(_ data: [UInt8]) throws -> (iccProfile: [UInt8]?, exif: [UInt8]?) {
    try data.withUnsafeBytes { try metadata($0) }
  }

  /// The chunk payloads of bytes read in place.
  public static func metadata(_ data: UnsafeRawBufferPointer) throws -> (iccProfile: [UInt8]?, exif: [UInt8]?)
  {
    try data.withUnsafeBufferPointer { buffer in
      var webpData = WebPData(bytes: buffer.baseAddress, size: buffer.count)
      guard let raw = WebPDemux(&webpData) else {
        throw CodecError(
          declaredLength(data) > data.count ? .truncated : .corrupt, codec: codec, "demux failed")
      }
      let demuxer = Demuxer(raw)
      return (demuxer.chunk("ICCP"), demuxer.chunk("EXIF"))
    }
  }

  private static func firstFrame(_ data: UnsafeRawBufferPointer) throws -> PixelBuffer {
    try data.withUnsafeBufferPointer { buffer in
      var options = WebPAnimDecoderOptions()
      guard WebPAnimDecoderOptionsInit(&options) != 0 else {
        throw CodecError(.internal, codec: codec, "WebPAnimDecoderOptionsInit: ABI mismatch")
      }
      options.color_mode = MODE_RGBA
      options.use_threads = 0
      var webpData = WebPData(bytes: buffer.baseAddress, size: buffer.count)
      guard let raw = WebPAnimDecoderNew(&webpData, &options) else {
        throw CodecError(declaredLength(data) > data.count ? .truncated : .corrupt, codec: codec, "animation")
      }
      let decoder = AnimationDecoder(raw)
      defer { withExtendedLifetime(decoder) {} }  // `frame` points into the decoder's canvas
      var info = WebPAnimInfo()
      var frame: UnsafeMutablePointer<UInt8>? = nil
      var timestamp: Int32 = 0
      guard WebPAnimDecoderGetInfo(decoder.raw, &info) != 0,
        WebPAnimDecoderGetNext(decoder.raw, &frame, &timestamp) != 0, let frame
      else {
        throw CodecError(
          declaredLength(data) > data.count ? .truncated : .corrupt, codec: codec, "first frame")
      }
      // The canvas belongs to the decoder and dies with it: copy it out once.
      let (width, height) = (Int(info.canvas_width), Int(info.canvas_height))
      let bytes = Array(UnsafeBufferPointer(start: frame, count: width * height * 4))
      return PixelBuffer(width: width, height: height, layout: .rgba, bytes: bytes)
    }
  }

  /// The RIFF size field plus its 8-byte header: how long the file says it is.
  private static func declaredLength(_ data: UnsafeRawBufferPointer) -> Int {
    guard data.count >= 8 else { return Int.max }
    return (Int(data[4]) | Int(data[5]) << 8 | Int(data[6]) << 16 | Int(data[7]) << 24) + 8
  }

  private static func check(_ status: VP8StatusCode, _ data: UnsafeRawBufferPointer, _ context: String) throws
  {
    let kind: CodecError.Kind
    switch status {
    case VP8_STATUS_OK: return
    case VP8_STATUS_NOT_ENOUGH_DATA: kind = .truncated
    case VP8_STATUS_UNSUPPORTED_FEATURE: kind = .unsupported
    case VP8_STATUS_OUT_OF_MEMORY, VP8_STATUS_INVALID_PARAM: kind = .internal
    default: kind = declaredLength(data) > data.count ? .truncated : .corrupt
    }
    throw CodecError(kind, codec: codec, "\(context): VP8 status \(status.rawValue)")
  }
}

/// Owns one WebPDemuxer; `deinit` deletes it.
private final class Demuxer {
  let raw: OpaquePointer
  init(_ raw: OpaquePointer) { self.raw = raw }
  deinit { WebPDemuxDelete(raw) }

  /// The payload of the first chunk with `fourcc`, copied out.
  func chunk(_ fourcc: String) -> [UInt8]? {
    var iterator = WebPChunkIterator()
    let found = fourcc.withCString { WebPDemuxGetChunk(raw, $0, 1, &iterator) }
    defer { WebPDemuxReleaseChunkIterator(&iterator) }
    guard found != 0, let bytes = iterator.chunk.bytes else { return nil }
    return Array(UnsafeBufferPointer(start: bytes, count: iterator.chunk.size))
  }
}

/// Owns one WebPAnimDecoder; `deinit` deletes it.
private final class AnimationDecoder {
  let raw: OpaquePointer
  init(_ raw: OpaquePointer) { self.raw = raw }
  deinit { WebPAnimDecoderDelete(raw) }
}
