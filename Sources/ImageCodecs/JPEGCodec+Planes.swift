private import CTurboJPEG

extension JPEGCodec {
  /// Decodes a YCbCr JPEG to its planes, shrinking on load like `decode`; nil when the file is
  /// not YCbCr (gray, RGB, CMYK, YCCK: use `decode`). libjpeg warnings are judged by `JPEGRecovery`.
  public static func decodePlanes(
    _ data: [UInt8], scaleToAtLeast target: (width: Int, height: Int)? = nil
  ) throws -> YCbCrPlanes? {
    try data.withUnsafeBytes { try decodePlanes($0, scaleToAtLeast: target) }
  }

  /// Decodes the planes of bytes read in place (see the `[UInt8]` variant).
  public static func decodePlanes(
    _ data: UnsafeRawBufferPointer, scaleToAtLeast target: (width: Int, height: Int)? = nil
  ) throws -> YCbCrPlanes? {
    let info = try readHeader(data)
    guard info.colourSpace == .ycbcr else { return nil }
    let size = scaledSize(width: info.width, height: info.height, toAtLeast: target)
    let samp = Int32(tjSubsampling(info.subsampling).rawValue)
    // TurboJPEG pads each plane to whole MCU rows and columns; the buffers hold that much.
    var planes: [(width: Int, height: Int, rowBytes: Int, rows: Int)] = []
    for component in Int32(0)..<3 {
      let rowBytes = Int(tjPlaneWidth(component, Int32(size.width), samp))
      let rows = Int(tjPlaneHeight(component, Int32(size.height), samp))
      guard rowBytes > 0, rows > 0 else {
        throw CodecError(.tooLarge, codec: codec, "plane size for \(size.width)x\(size.height)")
      }
      _ = try OutputSize.rowBytes(width: rowBytes, height: rows, channels: 1, codec: codec)
      // The luma's image size is the decoded size; a chroma plane's is its whole padded extent.
      planes.append(
        component == 0
          ? (size.width, size.height, rowBytes, rows) : (rowBytes, rows, rowBytes, rows))
    }
    // TurboJPEG writes every byte of each padded plane (whole MCU rows), so they are not zeroed
    // first; a failed decode throws and its planes are dropped unread.
    func plane(_ index: Int) -> [UInt8] {
      let count = planes[index].rowBytes * planes[index].rows
      return [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }
    var y = plane(0)
    var cb = plane(1)
    var cr = plane(2)
    let handle = try TJHandle(decompress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var strides = planes.map { Int32($0.rowBytes) }
    try y.withUnsafeMutableBufferPointer { yp in
      try cb.withUnsafeMutableBufferPointer { cbp in
        try cr.withUnsafeMutableBufferPointer { crp in
          var pointers: [UnsafeMutablePointer<UInt8>?] = [yp.baseAddress, cbp.baseAddress, crp.baseAddress]
          try JPEGRecovery.run(data, handle: handle, context: "decode") { flags in
            data.withUnsafeBufferPointer { input in
              tjDecompressToYUVPlanes(
                handle.raw, input.baseAddress, UInt(input.count), &pointers, Int32(size.width), &strides,
                Int32(size.height), flags)
            }
          }
        }
      }
    }
    func buffer(_ index: Int, _ bytes: [UInt8]) -> PixelBuffer {
      let plane = planes[index]
      return PixelBuffer(
        width: plane.width, height: plane.height, layout: .gray, rowBytes: plane.rowBytes, bytes: bytes)
    }
    let factors = (horizontal: info.mcuSize.width / 8, vertical: info.mcuSize.height / 8)
    return YCbCrPlanes(luma: buffer(0, y), cb: buffer(1, cb), cr: buffer(2, cr), subsampling: factors)
  }

  /// RGB pixels from JFIF planes (BT.601 full range, centred chroma) subsampled by 1 or 2 on
  /// each side (2 only on an even side, with the chroma exactly half the luma there), with
  /// TurboJPEG's colour conversion; each chroma sample covers its luma samples (no smoothing).
  public static func rgb(from planes: YCbCrPlanes) throws -> PixelBuffer {
    let (h, v) = planes.subsampling
    let exact =
      planes.isJFIF && [1, 2].contains(h) && [1, 2].contains(v) && planes.width % h == 0
      && planes.height % v == 0
      && (planes.cb.width, planes.cb.height) == (planes.width / h, planes.height / v)
    let samp: TJSAMP
    switch exact ? [h, v] : [] {
    case [1, 1]: samp = TJSAMP_444
    case [2, 1]: samp = TJSAMP_422
    case [1, 2]: samp = TJSAMP_440
    case [2, 2]: samp = TJSAMP_420
    default:
      throw CodecError(
        .internal, codec: codec,
        "rgb(from:): \(planes.isJFIF ? "" : "non-JFIF ")chroma \(planes.cb.width)x\(planes.cb.height) subsampled \(h)x\(v) for luma \(planes.width)x\(planes.height)"
      )
    }
    let (width, height) = (planes.width, planes.height)
    let rowBytes = try OutputSize.rowBytes(width: width, height: height, channels: 3, codec: codec)
    let handle = try TJHandle(decompress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var strides = [Int32(planes.luma.rowBytes), Int32(planes.cb.rowBytes), Int32(planes.cr.rowBytes)]
    var status: Int32 = 0
    let bytes = [UInt8](unsafeUninitializedCapacity: rowBytes * height) { out, count in
      status = planes.luma.bytes.withUnsafeBufferPointer { yp in
        planes.cb.bytes.withUnsafeBufferPointer { cbp in
          planes.cr.bytes.withUnsafeBufferPointer { crp in
            var pointers: [UnsafePointer<UInt8>?] = [yp.baseAddress, cbp.baseAddress, crp.baseAddress]
            return tjDecodeYUVPlanes(
              handle.raw, &pointers, &strides, Int32(samp.rawValue), out.baseAddress, Int32(width),
              Int32(rowBytes), Int32(height), Int32(TJPF_RGB.rawValue), 0)
          }
        }
      }
      count = status == 0 ? out.count : 0
    }
    guard status == 0 else {
      throw CodecError(
        .internal, codec: codec, "planes to RGB: " + String(cString: tjGetErrorStr2(handle.raw)))
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  /// Writes RGB `pixels` (even width and height, the planes' width) as JFIF Y′CbCr into
  /// 4:2:0 `planes` from luma row `row` (even): TurboJPEG's SIMD colour conversion and its 2 × 2
  /// averaging, what its encoder does to RGB, into rows the caller owns.
  public static func storeYUV(_ pixels: PixelBuffer, into planes: inout YCbCrPlanes, atRow row: Int) throws {
    guard pixels.layout == .rgb, pixels.width == planes.width, pixels.width % 2 == 0, pixels.height % 2 == 0,
      row % 2 == 0, row >= 0, row + pixels.height <= planes.height, planes.subsampling == (2, 2),
      planes.cb.width * 2 == planes.width, planes.cr.width * 2 == planes.width,
      (row + pixels.height) / 2 <= min(planes.cb.height, planes.cr.height)
    else {
      throw CodecError(.internal, codec: codec, "storeYUV: RGB rows do not fit the 4:2:0 planes")
    }
    let handle = try TJHandle(compress: ())
    defer { withExtendedLifetime(handle) {} }  // the C calls below use handle.raw
    var strides = [Int32(planes.luma.rowBytes), Int32(planes.cb.rowBytes), Int32(planes.cr.rowBytes)]
    let (lumaOffset, cbOffset, crOffset) = (
      row * planes.luma.rowBytes, row / 2 * planes.cb.rowBytes, row / 2 * planes.cr.rowBytes
    )
    let status = pixels.bytes.withUnsafeBufferPointer { rgb in
      planes.luma.bytes.withUnsafeMutableBufferPointer { yp in
        planes.cb.bytes.withUnsafeMutableBufferPointer { cbp in
          planes.cr.bytes.withUnsafeMutableBufferPointer { crp in
            var pointers: [UnsafeMutablePointer<UInt8>?] = [
              yp.baseAddress! + lumaOffset, cbp.baseAddress! + cbOffset, crp.baseAddress! + crOffset,
            ]
            return tjEncodeYUVPlanes(
              handle.raw, rgb.baseAddress, Int32(pixels.width), Int32(pixels.rowBytes), Int32(pixels.height),
              Int32(TJPF_RGB.rawValue), &pointers, &strides, Int32(TJSAMP_420.rawValue), 0)
          }
        }
      }
    }
    guard status == 0 else {
      throw CodecError(
        .internal, codec: codec, "RGB to planes: " + String(cString: tjGetErrorStr2(handle.raw)))
    }
    planes.matrix = .bt601
    planes.range = .full
  }

  private static func tjSubsampling(_ subsampling: JPEGInfo.Subsampling) -> TJSAMP {
    switch subsampling {
    case .s444: TJSAMP_444
    case .s422: TJSAMP_422
    case .s420: TJSAMP_420
    case .gray: TJSAMP_GRAY
    case .s440: TJSAMP_440
    case .s411: TJSAMP_411
    }
  }
}
