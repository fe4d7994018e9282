import ImageCodecs

/// Small synthetic images for the pixel-operation tests.
enum PixelFixtures {
  /// A `width` × `height` image whose pixel i (row-major) has channel c = i·10 + c + 1, so every
  /// sample is distinct and says where it came from; `padding` extra bytes end each row.
  static func numbered(width: Int, height: Int, layout: PixelBuffer.Layout, padding: Int = 0) -> PixelBuffer {
    let channels = layout.channels
    let rowBytes = width * channels + padding
    var bytes = [UInt8](repeating: 0xEE, count: rowBytes * height)
    for y in 0..<height {
      for x in 0..<width {
        for c in 0..<channels { bytes[y * rowBytes + x * channels + c] = UInt8((y * width + x) * 10 + c + 1) }
      }
    }
    return PixelBuffer(width: width, height: height, layout: layout, rowBytes: rowBytes, bytes: bytes)
  }

  /// Deterministic pseudo-random samples (a 32-bit LCG), `padding` extra bytes per row.
  static func noise(width: Int, height: Int, layout: PixelBuffer.Layout, seed: UInt32 = 1, padding: Int = 0)
    -> PixelBuffer
  {
    let rowBytes = width * layout.channels + padding
    var state = seed
    let bytes = (0..<(rowBytes * height)).map { _ -> UInt8 in
      state = state &* 1_664_525 &+ 1_013_904_223
      return UInt8(truncatingIfNeeded: state >> 24)
    }
    return PixelBuffer(width: width, height: height, layout: layout, rowBytes: rowBytes, bytes: bytes)
  }

  /// The samples of pixel (x, y).
  static func pixel(_ image: PixelBuffer, _ x: Int, _ y: Int) -> [UInt8] {
    let offset = y * image.rowBytes + x * image.layout.channels
    return Array(image.bytes[offset..<(offset + image.layout.channels)])
  }

  /// All pixels in row-major order, ignoring row padding.
  static func pixels(_ image: PixelBuffer) -> [[UInt8]] {
    (0..<image.height).flatMap { y in (0..<image.width).map { x in pixel(image, x, y) } }
  }
}
