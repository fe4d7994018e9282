private import CAVCodec
private import DelayLoadAVCodec

/// Decodes the HEVC pictures of a HEIF image (each grid tile, or the one picture of a plain
/// image) with libavcodec's HEVC decoder, one sample at a time. Create one per configuration
/// record (`hvcC`) and reuse it for every tile that shares it; use it from one thread at a time.
///
/// Strict by design: a sample that does not decode to exactly one whole, error-free picture is
/// an error (`CodecError`), never a concealed or partly grey picture. libavcodec is told to
/// stop at the first bitstream error (`AV_EF_EXPLODE`) and its corrupt-frame flags are checked.
public final class HEVCDecoder {
  static let codec = "hevc"

  /// Why libavcodec.so.59 could not be opened (once per process, by the first decoder), or nil
  /// when it is loaded. Nothing else in the process maps it (`Sources/DelayLoadAVCodec`).
  private static let libraryFailure: String? = DelayLoad_avcodec().map { String(cString: $0) }

  /// Opens libavcodec now instead of at the first decode; why it could not be, or nil.
  static func preload() -> String? { libraryFailure }

  /// Decoder settings.
  public struct Configuration: Sendable, Equatable {
    /// libavcodec threads for one picture, 1…64 (slice threading): they split a picture's
    /// slices and, when its PPS enables wavefront parallel processing (iPhone tiles do), its
    /// rows of coding tree units. On the iPhone XS photo 2 threads cost ~7 % more CPU than 1;
    /// they save wall time only where cores are idle. The worker pool, decoding images side by
    /// side, is the parallelism, hence 1. (Frame threading is never used: it pipelines
    /// pictures, and each sample here is decoded on its own.)
    public var threads = 1
    /// Largest width or height of a decoded picture.
    public var maximumDimension = 16_384
    /// Largest luma sample count of a decoded picture (also libavcodec's `max_pixels`, which
    /// refuses the frame buffer before it is allocated).
    public var maximumPixels = 250_000_000

    /// Creates decoder settings.
    public init(threads: Int = 1, maximumDimension: Int = 16_384, maximumPixels: Int = 250_000_000) {
      self.threads = threads
      self.maximumDimension = maximumDimension
      self.maximumPixels = maximumPixels
    }

    /// What is out of range, or nil when the settings are usable.
    public func validate() -> String? {
      if !(1...64).contains(threads) { return "threads must be 1…64 (is \(threads))" }
      if !(1...65_535).contains(maximumDimension) {
        return "maximumDimension must be 1…65535 (is \(maximumDimension))"
      }
      if maximumPixels < 1 { return "maximumPixels must be positive (is \(maximumPixels))" }
      return nil
    }
  }

  /// The settings this decoder was made with.
  public let configuration: Configuration
  private let context: AVCodecContextHandle
  private let packet: AVPacketHandle
  private let frame: AVFrameHandle
  /// Receives a second picture from one sample, which makes the sample an error.
  private let spare: AVFrameHandle
  /// Bytes of each NAL unit's length prefix in a sample (`lengthSizeMinusOne` + 1).
  private let lengthSize: Int

  /// Opens a decoder for pictures described by `configurationRecord`, the bytes of a HEIF
  /// item's `hvcC` property (an HEVCDecoderConfigurationRecord with the VPS, SPS and PPS). A
  /// record libavcodec rejects is `.corrupt`; one whose SPS exceeds the limits is `.tooLarge`.
  public init<Bytes: Collection<UInt8>>(
    configurationRecord: Bytes, configuration: Configuration = Configuration()
  ) throws {
    if let problem = configuration.validate() {
      throw CodecError(.internal, codec: Self.codec, "configuration: \(problem)")
    }
    let record = Array(configurationRecord)
    // Version 1 and the 23-byte fixed part; anything else would make libavcodec read the
    // extradata as Annex-B parameter sets, and the samples as start-code streams.
    guard record.count >= 23, record[0] == 1 else {
      throw CodecError(.corrupt, codec: Self.codec, "hvcC: not a version 1 record (\(record.count) bytes)")
    }
    self.configuration = configuration
    self.lengthSize = Int(record[21] & 3) + 1
    guard lengthSize != 3 else { throw CodecError(.corrupt, codec: Self.codec, "hvcC: 3-byte NAL lengths") }
    if let failure = Self.libraryFailure { throw CodecError(.internal, codec: Self.codec, failure) }
    AVCodecLog.installIfNeeded()
    guard let decoder = avcodec_find_decoder(AV_CODEC_ID_HEVC) else {
      throw CodecError(.internal, codec: Self.codec, "libavcodec has no HEVC decoder")
    }
    context = try AVCodecContextHandle(decoder)
    packet = try AVPacketHandle()
    frame = try AVFrameHandle()
    spare = try AVFrameHandle()

    let ctx = context.raw
    ctx.pointee.thread_count = Int32(configuration.threads)
    ctx.pointee.thread_type = configuration.threads > 1 ? FF_THREAD_SLICE : 0
    // EXPLODE: stop at the first error instead of concealing it. CRCCHECK: verify the decoded
    // picture hash SEI when an encoder wrote one. BITSTREAM, BUFFER: report deviations and
    // overreads as errors, which EXPLODE then makes fatal.
    ctx.pointee.err_recognition = AV_EF_EXPLODE | AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_BUFFER
    ctx.pointee.max_pixels = Int64(configuration.maximumPixels)
    // libavcodec reads up to AV_INPUT_BUFFER_PADDING_SIZE bytes past the end and frees the
    // extradata with av_free (in avcodec_free_context): so av_mallocz, zeroed padding included.
    let padded = record.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)
    guard let extradata = av_mallocz(padded) else {
      throw CodecError(.internal, codec: Self.codec, "av_mallocz(\(padded)) failed")
    }
    record.withUnsafeBytes { extradata.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    ctx.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
    ctx.pointee.extradata_size = Int32(clamping: record.count)

    let status = avcodec_open2(ctx, decoder, nil)
    guard status >= 0 else {
      throw CodecError(.corrupt, codec: Self.codec, "hvcC rejected: \(avErrorText(status))")
    }
    // Opening parsed the record's SPS into the context's size: refuse a picture that would be
    // too large before any sample allocates for it.
    try checkSize(width: Int(ctx.pointee.width), height: Int(ctx.pointee.height))
  }

  /// Decodes one sample (length-prefixed NAL units, as HEIF stores an image item or a tile)
  /// and lends the picture to `body`, whose planes are read in place in libavcodec's buffer.
  /// The frame is valid only inside `body`. A sample that is cut short is `.truncated`; one that
  /// decodes to no picture, more than one, or a damaged one is `.corrupt`; one whose picture
  /// exceeds the limits is `.tooLarge`.
  public func decode<Value>(
    _ sample: UnsafeRawBufferPointer, _ body: (borrowing HEVCFrame) throws -> Value
  ) throws -> Value {
    try HEVCSample.check(sample, lengthSize: lengthSize)
    let ctx = context.raw
    try fillPacket(sample)

    var clean = false  // whether the decoder can take the next sample as it is
    defer {
      av_frame_unref(frame.raw)
      av_packet_unref(packet.raw)
      // After an error or a drain, libavcodec needs a reset before the next sample.
      if !clean { avcodec_flush_buffers(ctx) }
    }
    var status = avcodec_send_packet(ctx, packet.raw)
    guard status >= 0 else { throw sendError(status) }
    status = avcodec_receive_frame(ctx, frame.raw)
    var drained = false
    if status == CAVCodec_AVERROR_EAGAIN() {
      // The SPS lets the decoder hold pictures back for reordering: drain it.
      drained = true
      _ = avcodec_send_packet(ctx, nil)
      status = avcodec_receive_frame(ctx, frame.raw)
    }
    guard status >= 0 else {
      if status == CAVCodec_AVERROR_EOF() || status == CAVCodec_AVERROR_EAGAIN() {
        throw CodecError(.corrupt, codec: Self.codec, "the sample holds no picture")
      }
      throw sendError(status)
    }
    let second = avcodec_receive_frame(ctx, spare.raw)
    av_frame_unref(spare.raw)
    if second >= 0 { throw CodecError(.corrupt, codec: Self.codec, "the sample holds more than one picture") }
    let decoded = try view(frame.raw)
    clean = !drained
    return try body(decoded)
  }

  /// Decodes one sample held in any contiguous byte collection (see `decode(_:_:)`).
  public func decode<Bytes: Collection<UInt8>, Value>(
    _ sample: Bytes, _ body: (borrowing HEVCFrame) throws -> Value
  ) throws -> Value {
    if let result = try sample.withContiguousStorageIfAvailable({
      try decode(UnsafeRawBufferPointer($0), body)
    }) {
      return result
    }
    return try Array(sample).withUnsafeBytes { try decode($0, body) }
  }

  /// Copies the sample into the packet's own buffer: libavcodec needs
  /// AV_INPUT_BUFFER_PADDING_SIZE zeroed bytes after the data, which a tile in the middle of a
  /// file does not have. This is the only copy of the sample (~0.1 ms for all tiles of a 12 MP
  /// photo, against ~150 ms of decoding).
  private func fillPacket(_ sample: UnsafeRawBufferPointer) throws {
    av_packet_unref(packet.raw)
    guard sample.count <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE) else {
      throw CodecError(.tooLarge, codec: Self.codec, "sample of \(sample.count) bytes")
    }
    guard av_new_packet(packet.raw, Int32(sample.count)) == 0, let data = packet.raw.pointee.data else {
      throw CodecError(.internal, codec: Self.codec, "av_new_packet(\(sample.count)) failed")
    }
    UnsafeMutableRawPointer(data).copyMemory(from: sample.baseAddress!, byteCount: sample.count)
  }

  /// The error for a failed send or receive.
  private func sendError(_ status: Int32) -> CodecError {
    let text = avErrorText(status)
    let ctx = context.raw
    let (width, height) = (Int(ctx.pointee.width), Int(ctx.pointee.height))
    // A parameter set in the sample itself can announce a larger picture than the record did:
    // libavcodec then refuses the frame buffer (max_pixels) with EINVAL.
    if (try? checkSize(width: width, height: height)) == nil {
      return CodecError(.tooLarge, codec: Self.codec, "picture \(width)x\(height): \(text)")
    }
    if status == CAVCodec_AVERROR_ENOMEM() { return CodecError(.internal, codec: Self.codec, text) }
    if status == CAVCodec_AVERROR_PATCHWELCOME() || status == CAVCodec_AVERROR_ENOSYS() {
      return CodecError(.unsupported, codec: Self.codec, text)
    }
    return CodecError(.corrupt, codec: Self.codec, text)
  }

  /// The decoded picture as an `HEVCFrame` over libavcodec's buffers, after checking that it is
  /// whole and in a layout we read: planar, native-endian, 1 or 3 planes, 8–16 bits.
  private func view(_ decoded: UnsafeMutablePointer<AVFrame>) throws -> HEVCFrame {
    let f = decoded.pointee
    // Set when libavcodec concealed errors or lacked a reference: the picture is not what the
    // encoder made. (EXPLODE normally fails the decode first; this is the second net.)
    if f.flags & AV_FRAME_FLAG_CORRUPT != 0 || f.decode_error_flags != 0 {
      throw CodecError(
        .corrupt, codec: Self.codec, "damaged picture (flags \(f.flags), errors \(f.decode_error_flags))")
    }
    let (width, height) = (Int(f.width), Int(f.height))
    guard width > 0, height > 0 else {
      throw CodecError(.corrupt, codec: Self.codec, "picture \(width)x\(height)")
    }
    try checkSize(width: width, height: height)
    guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: f.format)) else {
      throw CodecError(.unsupported, codec: Self.codec, "pixel format \(f.format)")
    }
    let d = descriptor.pointee
    let name = d.name.map { String(cString: $0) } ?? "\(f.format)"
    let components = Int(d.nb_components)
    let depth = Int(d.comp.0.depth)
    // GBR (matrix 0, identity) comes as gbrp: planes G, B, R, which are Y, Cb, Cr for that matrix.
    let refused = UInt64(
      AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_ALPHA)
    guard d.flags & refused == 0,
      components == 1 || (components == 3 && d.flags & UInt64(AV_PIX_FMT_FLAG_PLANAR) != 0),
      (8...16).contains(depth)
    else { throw CodecError(.unsupported, codec: Self.codec, "pixel format \(name)") }
    let chroma: HEVCChromaFormat
    switch (components, d.log2_chroma_w, d.log2_chroma_h) {
    case (1, _, _): chroma = .monochrome
    case (3, 1, 1): chroma = .yuv420
    case (3, 1, 0): chroma = .yuv422
    case (3, 0, 0): chroma = .yuv444
    default: throw CodecError(.unsupported, codec: Self.codec, "pixel format \(name)")
    }
    let bytesPerSample = depth > 8 ? 2 : 1
    let all = [d.comp.0, d.comp.1, d.comp.2].prefix(components)
    guard
      all.allSatisfy({
        Int($0.depth) == depth && Int($0.step) == bytesPerSample && $0.shift == 0 && $0.offset == 0
      })
    else { throw CodecError(.unsupported, codec: Self.codec, "pixel format \(name)") }

    let format = HEVCFrameFormat(
      width: width, height: height, bitDepth: depth, chroma: chroma,
      colour: NCLXColour(
        colourPrimaries: Int(f.color_primaries.rawValue), transferCharacteristics: Int(f.color_trc.rawValue),
        matrixCoefficients: Int(f.colorspace.rawValue), fullRange: f.color_range == AVCOL_RANGE_JPEG),
      chromaLocation: HEVCChromaLocation(rawValue: Int(f.chroma_location.rawValue)) ?? .unspecified)
    let data = [f.data.0, f.data.1, f.data.2]
    let strides = [f.linesize.0, f.linesize.1, f.linesize.2]
    var planes: [HEVCPlane] = []
    planes.reserveCapacity(components)
    for index in 0..<components {
      let size = format.planeSize(index)
      let rowBytes = Int(strides[index])
      guard let base = data[index], rowBytes >= size.width * bytesPerSample else {
        throw CodecError(
          .internal, codec: Self.codec, "plane \(index): stride \(rowBytes) for \(size.width) samples")
      }
      planes.append(
        HEVCPlane(
          baseAddress: UnsafeRawPointer(base), rowBytes: rowBytes, width: size.width, height: size.height,
          bytesPerSample: bytesPerSample))
    }
    return HEVCFrame(format: format, planes: planes)
  }

  /// Throws `.tooLarge` when a `width` × `height` picture is over the limits.
  func checkSize(width: Int, height: Int) throws {
    let limit = configuration.maximumDimension
    guard width <= limit, height <= limit, width * height <= configuration.maximumPixels else {
      throw CodecError(
        .tooLarge, codec: Self.codec,
        "picture \(width)x\(height) over \(limit) px per side or \(configuration.maximumPixels) pixels")
    }
  }
}

// The three libavcodec handles HEVCDecoder holds, one owning type each: each frees its handle
// in `deinit`, so no path (a throw half-way through `init` included) can leak one.

/// An opened (or, until `avcodec_open2`, allocated) `AVCodecContext`.
private final class AVCodecContextHandle {
  let raw: UnsafeMutablePointer<AVCodecContext>

  init(_ codec: UnsafePointer<AVCodec>) throws {
    guard let raw = avcodec_alloc_context3(codec) else {
      throw CodecError(.internal, codec: HEVCDecoder.codec, "avcodec_alloc_context3 failed")
    }
    self.raw = raw
  }

  deinit {
    // Frees the extradata (allocated with av_mallocz, as libavcodec requires) with the context.
    var pointer: UnsafeMutablePointer<AVCodecContext>? = raw
    avcodec_free_context(&pointer)
  }
}

/// An `AVPacket` reused for every sample; its data buffer is replaced per sample.
private final class AVPacketHandle {
  let raw: UnsafeMutablePointer<AVPacket>

  init() throws {
    guard let raw = av_packet_alloc() else {
      throw CodecError(.internal, codec: HEVCDecoder.codec, "av_packet_alloc failed")
    }
    self.raw = raw
  }

  deinit {
    var pointer: UnsafeMutablePointer<AVPacket>? = raw
    av_packet_free(&pointer)
  }
}

/// An `AVFrame` the decoder writes each picture into; unreferenced after each use.
private final class AVFrameHandle {
  let raw: UnsafeMutablePointer<AVFrame>

  init() throws {
    guard let raw = av_frame_alloc() else {
      throw CodecError(.internal, codec: HEVCDecoder.codec, "av_frame_alloc failed")
    }
    self.raw = raw
  }

  deinit {
    var pointer: UnsafeMutablePointer<AVFrame>? = raw
    av_frame_free(&pointer)
  }
}

/// libav's message for an error code (`av_strerror`), for logs.
private func avErrorText(_ code: Int32) -> String {
  withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
    guard av_strerror(code, buffer.baseAddress, buffer.count) == 0 else { return "error \(code)" }
    buffer[buffer.count - 1] = 0
    return String(cString: buffer.baseAddress!)
  }
}
