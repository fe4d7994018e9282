import ImageCodecs
import ImageContainers
import TestSupport

@testable import ImagePipeline

/// Test images whose correct appearance is known, built in code.
enum Fixtures {
  static let red: [UInt8] = [230, 30, 30]
  static let green: [UInt8] = [30, 200, 30]
  static let blue: [UInt8] = [30, 30, 230]
  static let yellow: [UInt8] = [240, 220, 20]

  /// An upright image of four coloured quadrants: red top-left, green top-right, blue
  /// bottom-left, yellow bottom-right.
  static func quadrants(width: Int, height: Int) -> PixelBuffer {
    var bytes = [UInt8](repeating: 0, count: width * height * 3)
    for y in 0..<height {
      for x in 0..<width {
        let colour = y < height / 2 ? (x < width / 2 ? red : green) : (x < width / 2 ? blue : yellow)
        bytes.replaceSubrange((y * width + x) * 3..<(y * width + x) * 3 + 3, with: colour)
      }
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  /// The colour at the centre of each quadrant of `image`, in the order TL, TR, BL, BR.
  static func quadrantColours(_ image: PixelBuffer) -> [[UInt8]] {
    let c = image.layout.channels
    return [(1, 1), (3, 1), (1, 3), (3, 3)].map { (qx, qy) in
      let x = image.width * qx / 4
      let y = image.height * qy / 4
      let o = y * image.rowBytes + x * c
      return c == 1 ? [image.bytes[o], image.bytes[o], image.bytes[o]] : Array(image.bytes[o..<(o + 3)])
    }
  }

  static func close(_ a: [UInt8], _ b: [UInt8], tolerance: Int = 40) -> Bool {
    zip(a, b).allSatisfy { abs(Int($0) - Int($1)) <= tolerance }
  }

  /// A TIFF block (big-endian) whose IFD0 holds only Orientation = `value`.
  static func exifTIFF(orientation value: Int) -> [UInt8] {
    [
      0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(value), 0, 0, 0, 0, 0,
      0,
    ]
  }

  /// A JPEG of `image` with an APP1 Exif segment carrying `orientation`, inserted after SOI.
  static func jpeg(_ image: PixelBuffer, orientation: Int?) throws -> [UInt8] {
    let encoded = try JPEGCodec.encode(image, quality: 95, subsampling: .s444)
    guard let orientation else { return encoded }
    let payload = Array("Exif\0\0".utf8) + exifTIFF(orientation: orientation)
    let length = payload.count + 2
    let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    return Array(encoded[0..<2]) + segment + Array(encoded[2...])
  }

  /// A PNG of RGB `image` (stored, uncompressed deflate blocks), with an `eXIf` chunk when given.
  static func png(_ image: PixelBuffer, orientation: Int? = nil, extraChunks: [(String, [UInt8])] = [])
    -> [UInt8]
  {
    let rowLength = image.width * image.layout.channels
    let pixels = (0..<image.height).flatMap {
      image.bytes[($0 * image.rowBytes)..<($0 * image.rowBytes + rowLength)]
    }
    let colourType: UInt8 = image.layout == .rgba ? 6 : image.layout == .gray ? 0 : 2
    let exif = orientation.map { [("eXIf", exifTIFF(orientation: $0))] } ?? []
    return PNGWriter.png(
      width: image.width, height: image.height, colourType: colourType, pixels: pixels,
      extraChunks: exif + extraChunks)
  }

  static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let typeBytes = Array(type.utf8)
    return be32(UInt32(data.count)) + typeBytes + data + be32(CRC32.checksum((typeBytes + data)[...]))
  }

  static func be32(_ v: UInt32) -> [UInt8] {
    [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
  }

  /// Mean absolute difference of two same-sized images (channels compared as stored).
  static func meanDifference(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    precondition(a.width == b.width && a.height == b.height && a.layout == b.layout)
    var total = 0
    let c = a.layout.channels
    for y in 0..<a.height {
      for i in 0..<(a.width * c) {
        total += abs(Int(a.bytes[y * a.rowBytes + i]) - Int(b.bytes[y * b.rowBytes + i]))
      }
    }
    return Double(total) / Double(a.width * a.height * c)
  }

  /// Replaces every occurrence of `pattern` in `bytes` at or after `from` (first `limit` matches).
  static func replacing(_ pattern: [UInt8], with replacement: [UInt8], in bytes: [UInt8], limit: Int = 1)
    -> [UInt8]
  {
    var out = bytes
    var done = 0
    var i = 0
    while i + pattern.count <= out.count, done < limit {
      if out[i..<(i + pattern.count)].elementsEqual(pattern) {
        out.replaceSubrange(i..<(i + pattern.count), with: replacement)
        done += 1
        i += pattern.count
      } else {
        i += 1
      }
    }
    return out
  }
}
