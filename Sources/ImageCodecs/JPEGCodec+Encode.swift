private import CTurboJPEG

extension JPEGCodec {
  /// Chroma subsampling for encoding.
  public enum EncodeSubsampling: Sendable {
    /// 4:2:0, for photos.
    case s420
    /// 4:4:4, for sharp text (screenshots).
    case s444
    /// One gray component.
    case gray
  }

  /// A lossless rearrangement of the DCT blocks (the EXIF orientations as `tjTransform` operations).
  public enum Operation: Sendable, CaseIterable {
    case none, hflip, vflip, transpose, transverse, rot90, rot180, rot270
  }

  /// Encodes gray or RGB pixels to a baseline JPEG holding only JFIF/DQT/SOF/DHT/SOS/EOI.
  /// Deterministic: the same pixels and settings give the same bytes.
  public static func encode(
    _ buffer: PixelBuffer, quality: Int, subsampling: EncodeSubsampling = .s420
  ) throws -> [UInt8] {
    let format: TJPF
    switch buffer.layout {
    case .gray: format = TJPF_GRAY
    case .rgb: format = TJPF_RGB
    case .rgba:
      // Dropping alpha here would turn transparent ink black; the pipeline must flatten first.
      throw CodecError(.internal, codec: codec, "encode needs gray or RGB pixels; flatten alpha first")
    }
    guard (1...100).contains(quality) else {
      throw CodecError(.internal, codec: codec, "quality \(quality) outside 1…100")
    }
    guard buffer.width > 0, buffer.height > 0, buffer.width <= 65_535, buffer.height <= 65_535 else {
      throw CodecError(.tooLarge, codec: codec, "\(buffer.width)x\(buffer.height) for JPEG")
    }
    let samp: TJSAMP
    switch (buffer.layout, subsampling) {
    case (.gray, _), (_, .gray): samp = TJSAMP_GRAY
    case (_, .s420): samp = TJSAMP_420
    case (_, .s444): samp = TJSAMP_444
    }
    let handle = try TJHandle(compress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var output: UnsafeMutablePointer<UInt8>? = nil
    var size: UInt = 0
    defer { tjFree(output) }
    let status = buffer.bytes.withUnsafeBufferPointer { pixels in
      tjCompress2(
        handle.raw, pixels.baseAddress, Int32(buffer.width), Int32(buffer.rowBytes), Int32(buffer.height),
        Int32(format.rawValue), &output, &size, Int32(samp.rawValue), Int32(quality), 0)
    }
    guard status == 0, let output else {
      throw CodecError(.internal, codec: codec, "encode: " + String(cString: tjGetErrorStr2(handle.raw)))
    }
    return Array(UnsafeBufferPointer(start: output, count: Int(size)))
  }

  /// Encodes JFIF 4:2:0 planes (BT.601 full range, centred chroma, chroma exactly half of each
  /// even side) to the same kind of baseline JPEG as `encode(_:quality:subsampling:)` at
  /// `.s420`, straight from the planes: no RGB, no conversion or downsampling in the encoder.
  public static func encode(planes: YCbCrPlanes, quality: Int) throws -> [UInt8] {
    let (width, height) = (planes.width, planes.height)
    let half = (width / 2, height / 2)
    guard planes.isJFIF, planes.subsampling == (2, 2), width % 2 == 0, height % 2 == 0,
      (planes.cb.width, planes.cb.height) == half, (planes.cr.width, planes.cr.height) == half
    else {
      throw CodecError(.internal, codec: codec, "encode(planes:) needs JFIF 4:2:0 planes with even sides")
    }
    guard (1...100).contains(quality) else {
      throw CodecError(.internal, codec: codec, "quality \(quality) outside 1…100")
    }
    guard width > 0, height > 0, width <= 65_535, height <= 65_535 else {
      throw CodecError(.tooLarge, codec: codec, "\(width)x\(height) for JPEG")
    }
    let handle = try TJHandle(compress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var output: UnsafeMutablePointer<UInt8>? = nil
    var size: UInt = 0
    defer { tjFree(output) }
    var strides = [Int32(planes.luma.rowBytes), Int32(planes.cb.rowBytes), Int32(planes.cr.rowBytes)]
    let status = planes.luma.bytes.withUnsafeBufferPointer { yp in
      planes.cb.bytes.withUnsafeBufferPointer { cbp in
        planes.cr.bytes.withUnsafeBufferPointer { crp in
          var pointers: [UnsafePointer<UInt8>?] = [yp.baseAddress, cbp.baseAddress, crp.baseAddress]
          return tjCompressFromYUVPlanes(
            handle.raw, &pointers, Int32(width), &strides, Int32(height), Int32(TJSAMP_420.rawValue),
            &output, &size, Int32(quality), 0)
        }
      }
    }
    guard status == 0, let output else {
      throw CodecError(.internal, codec: codec, "encode: " + String(cString: tjGetErrorStr2(handle.raw)))
    }
    return Array(UnsafeBufferPointer(start: output, count: Int(size)))
  }

  /// Whether `operation` keeps every edge pixel on this image (no partial MCU at a moved edge).
  public static func isPerfect(_ operation: Operation, for info: JPEGInfo) -> Bool {
    let (mcuW, mcuH) = info.mcuSize
    let fullWidth = info.width % mcuW == 0
    let fullHeight = info.height % mcuH == 0
    switch operation {
    case .none, .transpose: return true
    case .hflip, .rot270: return fullWidth
    case .vflip, .rot90: return fullHeight
    case .transverse, .rot180: return fullWidth && fullHeight
    }
  }

  /// Rewrites a JPEG with `tjTransform`, losslessly, copying no markers (so no metadata) —
  /// only JFIF/DQT/SOF/DHT/SOS/EOI remain, and nothing after EOI. libjpeg warnings are judged by
  /// `JPEGRecovery`. With `perfectOnly` an operation that would drop or
  /// garble partial edge MCUs fails with `.unsupported`; otherwise those edges are trimmed.
  public static func transform(
    _ data: [UInt8], operation: Operation, perfectOnly: Bool = true
  ) throws -> [UInt8] {
    try data.withUnsafeBytes { try transform($0, operation: operation, perfectOnly: perfectOnly) }
  }

  /// Transforms bytes read in place (see the `[UInt8]` variant).
  public static func transform(
    _ data: UnsafeRawBufferPointer, operation: Operation, perfectOnly: Bool = true
  ) throws -> [UInt8] {
    let info = try readHeader(data)
    if perfectOnly, !isPerfect(operation, for: info) {
      throw CodecError(
        .unsupported, codec: codec,
        "\(operation) is not perfect for \(info.width)x\(info.height) with MCU \(info.mcuSize)")
    }
    var options = TJXOPT_COPYNONE | (perfectOnly ? TJXOPT_PERFECT : TJXOPT_TRIM)
    if info.process == .progressive { options |= TJXOPT_PROGRESSIVE }
    var transform = tjtransform()
    transform.op = Int32(tjOperation(operation).rawValue)
    transform.options = options
    let handle = try TJHandle(transform: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var output: UnsafeMutablePointer<UInt8>? = nil
    var size: UInt = 0
    defer { tjFree(output) }
    try JPEGRecovery.run(data, handle: handle, context: "transform") { flags in
      // A second try (see `JPEGRecovery`) starts from no output, as the first did.
      tjFree(output)
      (output, size) = (nil, 0)
      return data.withUnsafeBufferPointer { input in
        tjTransform(handle.raw, input.baseAddress, UInt(input.count), 1, &output, &size, &transform, flags)
      }
    }
    guard let output else { throw handle.error(data, context: "transform") }
    return Array(UnsafeBufferPointer(start: output, count: Int(size)))
  }

  private static func tjOperation(_ operation: Operation) -> TJXOP {
    switch operation {
    case .none: TJXOP_NONE
    case .hflip: TJXOP_HFLIP
    case .vflip: TJXOP_VFLIP
    case .transpose: TJXOP_TRANSPOSE
    case .transverse: TJXOP_TRANSVERSE
    case .rot90: TJXOP_ROT90
    case .rot180: TJXOP_ROT180
    case .rot270: TJXOP_ROT270
    }
  }
}
