// TEMPORARY stand-ins for the pixelops branch's Pixels/ (Resampler, AlphaFlattener, Orienter),
// with the same names and signatures, so this branch builds and tests alone. Simple and slow
// (nearest-neighbour resize); deleted when pixelops is merged.
import ImageCodecs

enum Resampler {
  static func fitted(width: Int, height: Int, maxEdge: Int) -> (width: Int, height: Int) {
    let long = max(width, height)
    guard long > maxEdge else { return (width, height) }
    let short = max(1, (min(width, height) * maxEdge + long / 2) / long)
    return width >= height ? (maxEdge, short) : (short, maxEdge)
  }

  static func resize(_ image: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
    let c = image.layout.channels
    var out = [UInt8](repeating: 0, count: width * height * c)
    for y in 0..<height {
      let sy = min(image.height - 1, (2 * y + 1) * image.height / (2 * height))
      for x in 0..<width {
        let sx = min(image.width - 1, (2 * x + 1) * image.width / (2 * width))
        for k in 0..<c { out[(y * width + x) * c + k] = image.bytes[sy * image.rowBytes + sx * c + k] }
      }
    }
    return PixelBuffer(
      width: width, height: height, layout: image.layout, bytes: out, premultiplied: image.premultiplied)
  }
}

enum AlphaFlattener {
  static func flattenOntoWhite(_ image: PixelBuffer) -> PixelBuffer {
    guard image.layout == .rgba else { return image }
    var out = [UInt8](repeating: 0, count: image.width * image.height * 3)
    for y in 0..<image.height {
      for x in 0..<image.width {
        let s = y * image.rowBytes + x * 4
        let a = Int(image.bytes[s + 3])
        for k in 0..<3 {
          let c = Int(image.bytes[s + k])
          let v = image.premultiplied ? min(c, a) + 255 - a : (c * a + 255 * (255 - a) + 127) / 255
          out[(y * image.width + x) * 3 + k] = UInt8(v)
        }
      }
    }
    return PixelBuffer(width: image.width, height: image.height, layout: .rgb, bytes: out)
  }
}

enum Orienter {
  static func apply(_ orientation: Orientation, to image: PixelBuffer) -> PixelBuffer {
    if orientation == .up { return image }
    let c = image.layout.channels
    let (w, h) = (image.width, image.height)
    let (ow, oh) = orientation.displaySize(width: w, height: h)
    var out = [UInt8](repeating: 0, count: ow * oh * c)
    for y in 0..<oh {
      for x in 0..<ow {
        // Source coordinates of destination (x, y) for each EXIF orientation.
        let (sx, sy): (Int, Int)
        switch orientation {
        case .up: (sx, sy) = (x, y)
        case .upMirrored: (sx, sy) = (w - 1 - x, y)
        case .down: (sx, sy) = (w - 1 - x, h - 1 - y)
        case .downMirrored: (sx, sy) = (x, h - 1 - y)
        case .leftMirrored: (sx, sy) = (y, x)
        case .right: (sx, sy) = (y, h - 1 - x)
        case .rightMirrored: (sx, sy) = (w - 1 - y, h - 1 - x)
        case .left: (sx, sy) = (w - 1 - y, x)
        }
        for k in 0..<c { out[(y * ow + x) * c + k] = image.bytes[sy * image.rowBytes + sx * c + k] }
      }
    }
    return PixelBuffer(
      width: ow, height: oh, layout: image.layout, bytes: out, premultiplied: image.premultiplied)
  }
}
