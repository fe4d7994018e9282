import Foundation
import TestSupport
import Testing

@testable import ImageCodecs
@testable import ImagePipeline

/// The YCbCr-plane path for JPEG (decode, resize and orient planes, then RGB) must give what
/// the RGB path gives, up to rounding, for every stored subsampling, odd size and orientation.
@Suite struct PlanarJPEGTests {
  static func outputs(_ input: [UInt8], maxEdge: Int = 2048) throws -> (planar: PixelBuffer, rgb: PixelBuffer)
  {
    var planarConfiguration = Pipeline.Configuration()
    planarConfiguration.maxEdge = maxEdge
    planarConfiguration.losslessJPEG = false
    var rgbConfiguration = planarConfiguration
    rgbConfiguration.planarJPEG = false
    let planar = try Pipeline(configuration: planarConfiguration).process(input)
    let rgb = try Pipeline(configuration: rgbConfiguration).process(input)
    #expect(!planar.losslessTransform && !rgb.losslessTransform)
    return (try JPEGCodec.decode(planar.jpeg), try JPEGCodec.decode(rgb.jpeg))
  }

  /// A smooth colour field with a few hard edges: photo-like chroma plus something to misplace.
  static func scene(width: Int, height: Int) -> PixelBuffer {
    var bytes = [UInt8](repeating: 0, count: width * height * 3)
    for y in 0..<height {
      for x in 0..<width {
        let o = (y * width + x) * 3
        let edge = (x / max(1, width / 5) + y / max(1, height / 4)) % 2 == 0
        bytes[o] = UInt8(x * 255 / max(1, width - 1))
        bytes[o + 1] = edge ? 200 : UInt8(y * 255 / max(1, height - 1))
        bytes[o + 2] = edge ? 40 : 180
      }
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  /// `image` as a 4:2:0 JPEG, with an EXIF Orientation when given.
  static func jpeg420(_ image: PixelBuffer, orientation: Int?) throws -> [UInt8] {
    let encoded = try JPEGCodec.encode(image, quality: 95, subsampling: .s420)
    guard let orientation else { return encoded }
    let payload = Array("Exif\0\0".utf8) + Fixtures.exifTIFF(orientation: orientation)
    let length = payload.count + 2
    let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    return Array(encoded[0..<2]) + segment + Array(encoded[2...])
  }

  @Test(
    .enabled(if: corpusPresent, "skipped: corpus not present"),
    arguments: [
      "jpeg-iphone6-gps.jpg",  // 4:2:0, DCT-scaled
      "jpeg-canon-sx60-orient-6.jpg",  // 4:2:2, rotated
      "jpeg-icc-p3-d65.jpg",  // 4:4:4, Display P3
      "jpeg-icc-adobe-rgb-1998.jpg",  // 4:4:4, Adobe RGB
      "jpeg-nikon-d70s-gps-portrait.jpg",  // another layout
      "jpeg-arithmetic-coding.jpg", "jpeg-progressive-multichunk-icc.jpg", "jpeg-orient-5.jpg",
      "jpeg-orient-7.jpg", "jpeg-nokia83-gps.jpg",
    ])
  func corpusPhotosComeOutTheSameByEitherPath(_ name: String) throws {
    let (planar, rgb) = try Self.outputs(try corpusBytes(name))
    #expect((planar.width, planar.height) == (rgb.width, rgb.height))
    let psnr = ImageCompare.psnr(planar.bytes, rgb.bytes)
    #expect(psnr >= 40, "\(name): \(psnr) dB")
  }

  @Test(arguments: [(1001, 751, 333, 1), (1001, 751, 333, 6), (751, 1001, 333, 5), (1001, 751, 334, 3)])
  func oddSizesAndEveryRotationComeOutTheSameByEitherPath(
    width: Int, height: Int, maxEdge: Int, orientation: Int
  ) throws {
    let input = try Self.jpeg420(Self.scene(width: width, height: height), orientation: orientation)
    let (planar, rgb) = try Self.outputs(input, maxEdge: maxEdge)
    #expect((planar.width, planar.height) == (rgb.width, rgb.height))
    // The scene's hard, saturated chroma edges are the worst case for two different (both
    // valid) chroma filters; chroma shifted by one pixel against the luma scored 34.7 dB here.
    let psnr = ImageCompare.psnr(planar.bytes, rgb.bytes)
    #expect(psnr >= 38, "\(width)x\(height) o\(orientation): \(psnr) dB")
  }

  /// Where the blue-difference chroma crosses halfway between its two sides along row `y`
  /// (or column `x`), in pixels, interpolated between samples.
  static func chromaEdge(_ image: PixelBuffer, row y: Int? = nil, column x: Int? = nil) -> Double {
    let count = y != nil ? image.width : image.height
    let cb = (0..<count).map { i -> Double in
      let o = (y ?? i) * image.rowBytes + (x ?? i) * 3
      let (r, g, b) = (Double(image.bytes[o]), Double(image.bytes[o + 1]), Double(image.bytes[o + 2]))
      return -0.168_736 * r - 0.331_264 * g + 0.5 * b
    }
    let middle = (cb.first! + cb.last!) / 2
    for i in 1..<count where (cb[i - 1] - middle) * (cb[i] - middle) <= 0 && cb[i] != cb[i - 1] {
      return Double(i - 1) + (middle - cb[i - 1]) / (cb[i] - cb[i - 1]) + 0.5
    }
    return .nan
  }

  // Odd decoded sizes (35x19 and 1001x751 decode at full scale) are where chroma hangs over
  // the edge; odd output sizes are where it cannot be halved.
  @Test(arguments: [(35, 19, 33), (1001, 751, 1000), (640, 480, 101), (35, 19, 17), (1001, 751, 333)])
  func chromaEdgesStayWhereTheRGBPathPutsThemInEveryOrientation(width: Int, height: Int, maxEdge: Int) throws
  {
    for orientation in 1...8 {
      for vertical in [false, true] {
        // Two parts of equal luma and opposite blue-difference chroma, split four fifths of the
        // way across (or down): a stretched chroma plane misplaces the edge most far out.
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
          for x in 0..<width {
            let first = vertical ? y < height * 4 / 5 : x < width * 4 / 5
            let colour: [UInt8] = first ? [60, 110, 230] : [170, 110, 10]
            bytes.replaceSubrange((y * width + x) * 3..<(y * width + x) * 3 + 3, with: colour)
          }
        }
        let upright = PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
        let stored = Orienter.apply(Orientation(rawValue: orientation)!.inverse, to: upright)
        let (planar, rgb) = try Self.outputs(
          try Self.jpeg420(stored, orientation: orientation), maxEdge: maxEdge)
        let found =
          vertical
          ? (Self.chromaEdge(planar, column: planar.width / 2), Self.chromaEdge(rgb, column: rgb.width / 2))
          : (Self.chromaEdge(planar, row: planar.height / 2), Self.chromaEdge(rgb, row: rgb.height / 2))
        #expect(
          abs(found.0 - found.1) <= 0.35,
          "\(width)x\(height)→\(maxEdge) o\(orientation) \(vertical ? "rows" : "columns"): planar \(found.0), rgb \(found.1)"
        )
      }
    }
  }

  @Test(arguments: [(17, 9, 6), (17, 9, 3), (3, 1, 7), (1, 1, 8), (640, 480, 1)])
  func imagesThatAreNotResizedTakeTheRGBPath(width: Int, height: Int, orientation: Int) throws {
    let input = try Self.jpeg420(Self.scene(width: width, height: height), orientation: orientation)
    var configuration = Pipeline.Configuration()
    configuration.losslessJPEG = false
    var c = PipelineContext(input: input, configuration: configuration)
    for step in Pipeline.standardPath.prefix(while: { $0.name != "resize" }) { try step.run(&c) }
    #expect(c.planes == nil && c.pixels != nil)
    let (planar, rgb) = try Self.outputs(input)
    #expect(planar.bytes == rgb.bytes)
  }

  @Test func quadrantsStayInPlaceThroughThePlanes() throws {
    for orientation in 1...8 {
      let upright = Fixtures.quadrants(width: 301, height: 201)
      // Store the picture so that applying `orientation` shows it upright.
      let stored = Orienter.apply(Orientation(rawValue: orientation)!.inverse, to: upright)
      var configuration = Pipeline.Configuration()
      configuration.maxEdge = 151
      let output = try Pipeline(configuration: configuration).process(
        try Self.jpeg420(stored, orientation: orientation))
      let pixels = try JPEGCodec.decode(output.jpeg)
      #expect((pixels.width, pixels.height) == (151, 101), "orientation \(orientation)")
      let expected = [Fixtures.red, Fixtures.green, Fixtures.blue, Fixtures.yellow]
      for (found, want) in zip(Fixtures.quadrantColours(pixels), expected) {
        #expect(Fixtures.close(found, want), "orientation \(orientation): \(found) for \(want)")
      }
    }
  }

  @Test func onlyYCbCrJPEGsTakeThePlanes() throws {
    let colour = try Self.jpeg420(Self.scene(width: 64, height: 48), orientation: nil)
    let gray = try JPEGCodec.encode(
      PixelBuffer(width: 64, height: 48, layout: .gray, bytes: [UInt8](repeating: 90, count: 64 * 48)),
      quality: 90, subsampling: .gray)
    #expect(try JPEGCodec.decodePlanes(colour) != nil)
    #expect(try JPEGCodec.decodePlanes(gray) == nil)
    var configuration = Pipeline.Configuration()
    configuration.maxEdge = 30
    var c = PipelineContext(input: colour, configuration: configuration)
    for step in Pipeline.standardPath.prefix(while: { $0.name != "merge-planes" }) { try step.run(&c) }
    let planes = try #require(c.planes)
    // 30x23: the odd side keeps its chroma whole.
    #expect((planes.width, planes.height, planes.cb.width, planes.cb.height) == (30, 23, 15, 23))
    #expect(c.pixels == nil)
  }

  @Test(arguments: [
    ((2048, 1536), (1024, 768)), ((2048, 1365), (1024, 1365)), ((333, 250), (333, 125)), ((17, 9), (17, 9)),
    ((1, 1), (1, 1)),
  ])
  func chromaIsHalvedOnlyAlongEvenSides(luma: (Int, Int), chroma: (Int, Int)) {
    #expect(YCbCrPlanes.chromaSize(width: luma.0, height: luma.1) == chroma)
  }
}
