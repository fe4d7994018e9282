/// How chroma is sampled in a decoded HEVC picture (`chroma_format_idc`).
public enum HEVCChromaFormat: Sendable, Equatable {
  /// Luma only (4:0:0).
  case monochrome
  /// Chroma at half width and half height.
  case yuv420
  /// Chroma at half width, full height.
  case yuv422
  /// Chroma at full resolution.
  case yuv444

  /// Luma samples per chroma sample across and down; nil for monochrome.
  public var subsampling: (horizontal: Int, vertical: Int)? {
    switch self {
    case .monochrome: nil
    case .yuv420: (2, 2)
    case .yuv422: (2, 1)
    case .yuv444: (1, 1)
    }
  }
}

/// Where chroma samples sit relative to luma (H.273 `Chroma420SampleLocType` + 1, as the VUI
/// says; libavcodec reports `left`, HEVC's default, for 4:2:0 without VUI, and `unspecified`
/// for 4:2:2, 4:4:4 and monochrome).
public enum HEVCChromaLocation: Int, Sendable, Equatable {
  case unspecified = 0
  /// Co-sited with the left luma column, halfway between rows (MPEG-2, HEVC's default).
  case left = 1
  /// Centred between luma samples both ways (JPEG, MPEG-1).
  case center = 2
  /// Co-sited with the top-left luma sample (BT.2020 4:2:0 convention).
  case topLeft = 3
  case top = 4
  case bottomLeft = 5
  case bottom = 6
}

/// What a decoded HEVC picture is: its size, sample format and colour as the bitstream says.
public struct HEVCFrameFormat: Sendable, Equatable {
  /// Width in luma samples, after the SPS conformance window (the picture's own cropping).
  public var width: Int
  /// Height in luma samples, after the conformance window.
  public var height: Int
  /// Bits per sample: 8 (stored one byte per sample) or 9–16 (two bytes, native-endian UInt16).
  public var bitDepth: Int
  public var chroma: HEVCChromaFormat
  /// The VUI colour description as H.273 code points: primaries, transfer and matrix are 2
  /// (unspecified) when the SPS carries none; `fullRange` is false then, HEVC's default. A HEIF
  /// `colr` box overrides this. Matrix 0 (identity) means the planes are G, B, R.
  public var colour: NCLXColour
  public var chromaLocation: HEVCChromaLocation

  /// Bytes per stored sample: 1 or 2.
  public var bytesPerSample: Int { bitDepth > 8 ? 2 : 1 }
  /// 1 (monochrome) or 3.
  public var planeCount: Int { chroma == .monochrome ? 1 : 3 }

  /// The size of plane `index` (0 luma, 1 Cb, 2 Cr): chroma sizes round up, as HEVC codes them.
  public func planeSize(_ index: Int) -> (width: Int, height: Int) {
    guard index > 0, let factors = chroma.subsampling else { return (width, height) }
    return (
      (width + factors.horizontal - 1) / factors.horizontal,
      (height + factors.vertical - 1) / factors.vertical
    )
  }

  /// Creates a format description.
  public init(
    width: Int, height: Int, bitDepth: Int, chroma: HEVCChromaFormat, colour: NCLXColour,
    chromaLocation: HEVCChromaLocation
  ) {
    self.width = width
    self.height = height
    self.bitDepth = bitDepth
    self.chroma = chroma
    self.colour = colour
    self.chromaLocation = chromaLocation
  }
}

/// One plane of a decoded picture, read in place in libavcodec's buffer. Valid only inside the
/// `HEVCDecoder.decode` closure that handed it out: the buffer is reused for the next picture.
public struct HEVCPlane {
  /// The first sample of the first row.
  public let baseAddress: UnsafeRawPointer
  /// Bytes from one row to the next (positive; at least `width × bytesPerSample`).
  public let rowBytes: Int
  /// Samples per row.
  public let width: Int
  /// Rows.
  public let height: Int
  /// 1 (UInt8 samples) or 2 (native-endian UInt16 samples holding `bitDepth` bits).
  public let bytesPerSample: Int

  /// Row `y` as 8-bit samples; only when `bytesPerSample` is 1.
  public func row8(_ y: Int) -> UnsafeBufferPointer<UInt8> {
    precondition(bytesPerSample == 1 && (0..<height).contains(y), "HEVCPlane.row8: not an 8-bit row")
    return UnsafeBufferPointer(
      start: (baseAddress + y * rowBytes).assumingMemoryBound(to: UInt8.self), count: width)
  }

  /// Row `y` as 16-bit samples; only when `bytesPerSample` is 2.
  public func row16(_ y: Int) -> UnsafeBufferPointer<UInt16> {
    precondition(bytesPerSample == 2 && (0..<height).contains(y), "HEVCPlane.row16: not a 16-bit row")
    return UnsafeBufferPointer(
      start: (baseAddress + y * rowBytes).assumingMemoryBound(to: UInt16.self), count: width)
  }
}

/// A decoded picture, lent to the closure of `HEVCDecoder.decode`. It cannot be copied or kept:
/// its planes point into libavcodec's buffer, which the next decode reuses.
public struct HEVCFrame: ~Copyable {
  /// Size, sample format and colour.
  public let format: HEVCFrameFormat
  private let planes: [HEVCPlane]

  init(format: HEVCFrameFormat, planes: [HEVCPlane]) {
    self.format = format
    self.planes = planes
  }

  /// Plane `index`: 0 luma, 1 Cb, 2 Cr (for matrix 0: G, B, R). Monochrome has only plane 0.
  public func plane(_ index: Int) -> HEVCPlane {
    precondition((0..<planes.count).contains(index), "HEVCFrame: no plane \(index)")
    return planes[index]
  }
}
