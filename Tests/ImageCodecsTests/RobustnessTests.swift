import Foundation
import ImageCodecs
import TestSupport
import Testing

/// Damaged variants of small corpus files (cut short at many points, single bytes flipped) either
/// decode or throw a CodecError: never crash, hang or trip the sanitizers. The number of variants
/// per file is 16 by default; set ATTACHD_ROBUSTNESS_VARIANTS for more.
@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct RobustnessTests {
  static let variants = Int(ProcessInfo.processInfo.environment["ATTACHD_ROBUSTNESS_VARIANTS"] ?? "") ?? 16

  static func decode(_ name: String, _ data: [UInt8]) throws {
    switch name.split(separator: ".").last {
    case "jpg":
      _ = try JPEGCodec.decode(data, scaleToAtLeast: (64, 64), iccProfile: JPEGCodec.iccProfile(data))
      _ = try JPEGCodec.transform(data, operation: .rot90, perfectOnly: false)
    case "png":
      _ = try PNGCodec.decode(data)
      _ = try PNGCodec.iccProfile(data)
    case "webp":
      _ = try WebPCodec.decode(data)
      _ = try WebPCodec.metadata(data)
    case "gif": _ = try GIFCodec.decode(data)
    default: _ = try HEIFCodec.decode(data)
    }
  }

  @Test(arguments: [
    "jpeg-arithmetic-coding.jpg", "jpeg-cmyk-adobe-ycck-photoshop.jpg", "jpeg-single-quant-table.jpg",
    "jpeg-malformed-gps-ifd.jpg", "png-palette-trns.png", "png-interlaced-adam7-rgba.png", "png-rgba16.png",
    "png-icc-display-p3.png", "webp-lossy-alpha.webp", "webp-animated-lossy-alpha.webp",
    "webp-exif-orient-6.webp", "gif-animated.gif", "heic-alpha-10bit-odd-size.heif", "heic-misnamed-as.jpg",
  ])
  func damagedFilesDecodeOrThrowCodecErrors(name: String) throws {
    if let only = ProcessInfo.processInfo.environment["ATTACHD_ROBUSTNESS_ONLY"], !name.contains(only) {
      return
    }
    let original = try Fixtures.corpus(name)
    let kind = name == "heic-misnamed-as.jpg" ? "x.heic" : name
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(original.count)
    func next() -> Int {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int(truncatingIfNeeded: seed >> 33)
    }
    var damaged: [[UInt8]] = []
    for i in 1...Self.variants {
      damaged.append(Array(original.prefix(original.count * i / (Self.variants + 1))))
      var flipped = original
      for _ in 0..<3 { flipped[next() % flipped.count] ^= UInt8(truncatingIfNeeded: next() | 1) }
      damaged.append(flipped)
    }
    for data in damaged {
      do {
        try Self.decode(kind, data)
      } catch is CodecError {
        // A clean rejection.
      }
    }
  }
}
