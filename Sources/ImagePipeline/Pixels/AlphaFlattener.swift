import ImageCodecs

/// Composites RGBA onto an opaque white background. The decoders deliver alpha only as RGBA
/// (`PixelBuffer.Layout` has no gray+alpha), so gray and RGB pass through unchanged.
enum AlphaFlattener {
  /// `image` composited over white as tight RGB; gray and RGB images are returned unchanged.
  ///
  /// Straight alpha: `(c·a + 255·(255 − a)) / 255`, rounded to nearest. Premultiplied alpha:
  /// `c + 255 − a` (exact), with `c` clamped to `a` first. A fully transparent pixel becomes
  /// white whatever colour it stores (transparent black "ink" must not show).
  static func flattenOntoWhite(_ image: PixelBuffer) -> PixelBuffer {
    guard image.layout == .rgba else { return image }
    let (width, height) = (image.width, image.height)
    let count = width * height * 3
    let premultiplied = image.premultiplied
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
      image.bytes.withUnsafeBufferPointer { src in
        guard let source = src.baseAddress, let dst = out.baseAddress else { return }
        for y in 0..<height {
          let s = source + y * image.rowBytes
          let d = dst + y * width * 3
          if premultiplied {
            for x in 0..<width {
              let a = s[x * 4 + 3]
              let white = 255 &- a
              d[x * 3] = min(s[x * 4], a) &+ white
              d[x * 3 + 1] = min(s[x * 4 + 1], a) &+ white
              d[x * 3 + 2] = min(s[x * 4 + 2], a) &+ white
            }
          } else {
            for x in 0..<width {
              let a = UInt32(s[x * 4 + 3])
              let white = 255 &* (255 &- a)
              d[x * 3] = divide255(UInt32(s[x * 4]) &* a &+ white)
              d[x * 3 + 1] = divide255(UInt32(s[x * 4 + 1]) &* a &+ white)
              d[x * 3 + 2] = divide255(UInt32(s[x * 4 + 2]) &* a &+ white)
            }
          }
        }
      }
      initialized = count
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  /// Straight-alpha RGBA converted to premultiplied RGBA (`c·a / 255`, rounded); other images
  /// are returned unchanged.
  static func premultiplied(_ image: PixelBuffer) -> PixelBuffer {
    guard image.layout == .rgba, !image.premultiplied else { return image }
    let (width, height) = (image.width, image.height)
    let count = width * height * 4
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
      image.bytes.withUnsafeBufferPointer { src in
        guard let source = src.baseAddress, let dst = out.baseAddress else { return }
        for y in 0..<height {
          let s = source + y * image.rowBytes
          let d = dst + y * width * 4
          for x in 0..<width {
            let a = UInt32(s[x * 4 + 3])
            for c in 0..<3 {
              d[x * 4 + c] = UInt8(truncatingIfNeeded: (UInt32(s[x * 4 + c]) &* a &+ 127) / 255)
            }
            d[x * 4 + 3] = UInt8(truncatingIfNeeded: a)
          }
        }
      }
      initialized = count
    }
    return PixelBuffer(width: width, height: height, layout: .rgba, bytes: bytes, premultiplied: true)
  }

  // x / 255 rounded to nearest, exact for 0 ≤ x ≤ 255 · 255 (checked exhaustively), without a
  // division.
  @inline(__always)
  static func divide255(_ x: UInt32) -> UInt8 {
    let y = x &+ 128
    return UInt8(truncatingIfNeeded: (y &+ (y >> 8)) >> 8)
  }
}
