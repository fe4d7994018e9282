/// A decoded HEVC picture copied out of libavcodec into 8-bit planes.
public struct HEVCPicture: Sendable {
  /// The decoded picture's format (its bit depth, colour and chroma siting are the source's:
  /// the planes hold the same samples rounded to 8 bits, still in the source's range).
  public var format: HEVCFrameFormat
  public var planes: HEVCPlanes
}

/// 8-bit planes: luma alone, or luma and chroma at the stored subsampling.
public enum HEVCPlanes: Sendable {
  case monochrome(PixelBuffer)
  /// Chroma sample `i` covers luma samples `i × factor ..< (i + 1) × factor` (see
  /// `YCbCrPlanes`); where it sits inside them is `HEVCFrameFormat.chromaLocation`.
  case ycbcr(YCbCrPlanes)

  /// The luma plane.
  public var luma: PixelBuffer {
    switch self {
    case .monochrome(let luma): luma
    case .ycbcr(let planes): planes.luma
    }
  }
}

extension HEVCDecoder {
  /// Decodes one sample (see `decode(_:_:)`) and copies the picture into 8-bit planes, rounding
  /// deeper samples as `HEVCSampleScale` says. For resampling straight out of libavcodec's
  /// buffers, use `decode(_:_:)`.
  public func decodePlanes<Bytes: Collection<UInt8>>(_ sample: Bytes) throws -> HEVCPicture {
    try decode(sample) { frame in frame.eightBitPicture() }
  }
}

extension HEVCFrame {
  /// The picture copied into 8-bit planes (tight rows), deeper samples rounded.
  public func eightBitPicture() -> HEVCPicture {
    var buffers: [PixelBuffer] = []
    for index in 0..<format.planeCount {
      let source = plane(index)
      let scale = HEVCSampleScale.table(
        bitDepth: format.bitDepth, fullRange: format.colour.fullRange, chroma: index > 0)
      let width = source.width
      let bytes = [UInt8](unsafeUninitializedCapacity: width * source.height) { out, initialized in
        for y in 0..<source.height {
          let target = UnsafeMutableBufferPointer(rebasing: out[y * width..<(y + 1) * width])
          if source.bytesPerSample == 1 {
            _ = target.initialize(from: source.row8(y))
          } else {
            let row = source.row16(y)
            let top = scale.count - 1
            scale.withUnsafeBufferPointer { table in
              for x in 0..<width { target[x] = table[min(Int(row[x]), top)] }
            }
          }
        }
        initialized = width * source.height
      }
      buffers.append(PixelBuffer(width: width, height: source.height, layout: .gray, bytes: bytes))
    }
    guard let factors = format.chroma.subsampling else {
      return HEVCPicture(format: format, planes: .monochrome(buffers[0]))
    }
    return HEVCPicture(
      format: format,
      planes: .ycbcr(YCbCrPlanes(luma: buffers[0], cb: buffers[1], cr: buffers[2], subsampling: factors)))
  }
}

/// How samples deeper than 8 bits map to 8 bits, as H.273 defines the quantisation of each
/// range; shared so that every consumer of HEVC planes rounds the same way.
public enum HEVCSampleScale {
  /// The 8-bit value of every `bitDepth`-bit sample (index = sample value).
  /// - Limited range (luma and chroma alike): the 8-bit code is the sample over 2^(depth−8),
  ///   rounded: 16…235 at 8 bits is exactly 64…940 at 10 bits (H.273: Y = (219·E + 16)·2^(n−8)).
  /// - Full range luma: round(v × 255 / (2^depth − 1)), so that 0 and 2^depth − 1 stay black and white.
  /// - Full range chroma: round(255 × (v − 2^(depth−1)) / (2^depth − 1) + 128), keeping the
  ///   neutral point at 128 (H.273: Cb = (2^n − 1)·E + 2^(n−1)).
  public static func table(bitDepth: Int, fullRange: Bool, chroma: Bool) -> [UInt8] {
    precondition((8...16).contains(bitDepth), "HEVCSampleScale: bit depth \(bitDepth)")
    let key = Key(bitDepth: bitDepth, fullRange: fullRange, chroma: chroma)
    if let table = cache.value(for: key) { return table }
    let count = 1 << bitDepth
    let maximum = Double(count - 1)
    let table = (0..<count).map { v -> UInt8 in
      let value: Double
      if !fullRange {
        value = Double(v) / Double(1 << (bitDepth - 8))
      } else if chroma {
        value = 255 * (Double(v) - Double(count / 2)) / maximum + 128
      } else {
        value = Double(v) * 255 / maximum
      }
      return UInt8(min(255, max(0, (value + 0.5).rounded(.down))))
    }
    cache.store(table, for: key)
    return table
  }

  private struct Key: Hashable, Sendable {
    var bitDepth: Int
    var fullRange: Bool
    var chroma: Bool
  }

  private static let cache = SharedCache<Key, [UInt8]>(limit: 16)
}
