import Foundation
import ImageCodecs
import TestSupport

/// Helpers shared by the codec tests.
enum Fixtures {
  /// The bytes of a corpus file.
  static func corpus(_ name: String) throws -> [UInt8] {
    // Foundation's Data(contentsOf:) leaks its 4 KB read buffer on a zero-byte file (seen under
    // LeakSanitizer), so the empty corpus file is answered without reading it.
    if let dir = Corpus.directory {
      let attributes = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(name).path)
      if (attributes[.size] as? NSNumber)?.intValue == 0 { return [] }
    }
    return [UInt8](try Corpus.data(name))
  }

  /// A deterministic synthetic photo-like image: smooth gradients plus a few sharp edges.
  static func gradient(width: Int, height: Int, layout: PixelBuffer.Layout = .rgb) -> PixelBuffer {
    var buffer = PixelBuffer(width: width, height: height, layout: layout)
    let channels = layout.channels
    for y in 0..<height {
      for x in 0..<width {
        let i = y * buffer.rowBytes + x * channels
        let edge: UInt8 = (x / 16 + y / 16) % 2 == 0 ? 0 : 40
        buffer.bytes[i] = UInt8(x * 200 / max(width - 1, 1)) &+ edge
        if channels >= 3 {
          buffer.bytes[i + 1] = UInt8(y * 200 / max(height - 1, 1))
          buffer.bytes[i + 2] = UInt8((x + y) * 100 / max(width + height - 2, 1)) &+ 60
        }
        if channels == 4 { buffer.bytes[i + 3] = 255 }
      }
    }
    return buffer
  }

  /// The pixel at (x, y) as an array of channel values.
  static func pixel(_ buffer: PixelBuffer, _ x: Int, _ y: Int) -> [Int] {
    let i = y * buffer.rowBytes + x * buffer.layout.channels
    return (0..<buffer.layout.channels).map { Int(buffer.bytes[i + $0]) }
  }

  /// Mean of each channel over a rectangle.
  static func mean(_ buffer: PixelBuffer, x: Range<Int>, y: Range<Int>) -> [Double] {
    var sums = [Double](repeating: 0, count: buffer.layout.channels)
    for row in y {
      for column in x {
        for (c, v) in pixel(buffer, column, row).enumerated() { sums[c] += Double(v) }
      }
    }
    return sums.map { $0 / Double(x.count * y.count) }
  }

  /// Peak signal-to-noise ratio in dB between two buffers of the same shape.
  static func psnr(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    precondition(a.width == b.width && a.height == b.height && a.layout == b.layout)
    return ImageCompare.psnr(tightSamples(a), tightSamples(b))
  }

  /// The samples of `image` without row padding.
  static func tightSamples(_ image: PixelBuffer) -> [UInt8] {
    let rowLength = image.width * image.layout.channels
    return (0..<image.height).flatMap {
      image.bytes[($0 * image.rowBytes)..<($0 * image.rowBytes + rowLength)]
    }
  }
}

extension Fixtures {
  /// A reference implementation of the lossless operations on decoded pixels.
  static func apply(_ operation: JPEGCodec.Operation, to buffer: PixelBuffer) -> PixelBuffer {
    let (w, h, c) = (buffer.width, buffer.height, buffer.layout.channels)
    let swaps = [.transpose, .transverse, .rot90, .rot270].contains(operation)
    var out = PixelBuffer(width: swaps ? h : w, height: swaps ? w : h, layout: buffer.layout)
    for y in 0..<out.height {
      for x in 0..<out.width {
        let (sx, sy): (Int, Int)
        switch operation {
        case .none: (sx, sy) = (x, y)
        case .hflip: (sx, sy) = (w - 1 - x, y)
        case .vflip: (sx, sy) = (x, h - 1 - y)
        case .rot180: (sx, sy) = (w - 1 - x, h - 1 - y)
        case .transpose: (sx, sy) = (y, x)
        case .transverse: (sx, sy) = (w - 1 - y, h - 1 - x)
        case .rot90: (sx, sy) = (y, h - 1 - x)
        case .rot270: (sx, sy) = (w - 1 - y, x)
        }
        for k in 0..<c {
          out.bytes[y * out.rowBytes + x * c + k] = buffer.bytes[sy * buffer.rowBytes + sx * c + k]
        }
      }
    }
    return out
  }
}
