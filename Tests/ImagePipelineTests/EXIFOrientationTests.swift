import ImageCodecs
import ImageContainers
import Testing

@testable import ImagePipeline

@Suite struct EXIFOrientationTests {
  /// Stored pixels that look upright once `orientation` is applied.
  static func stored(_ orientation: Orientation, width: Int, height: Int) -> PixelBuffer {
    Orienter.apply(orientation.inverse, to: Fixtures.quadrants(width: width, height: height))
  }

  static func expectUpright(_ output: [UInt8], width: Int, height: Int) throws {
    let decoded = try JPEGCodec.decode(output)
    #expect((decoded.width, decoded.height) == (width, height))
    let colours = Fixtures.quadrantColours(decoded)
    let expected = [Fixtures.red, Fixtures.green, Fixtures.blue, Fixtures.yellow]
    for (got, want) in zip(colours, expected) {
      #expect(Fixtures.close(got, want), "quadrants \(colours)")
    }
  }

  @Test(arguments: Orientation.allCases, [(96, 64), (90, 60)])
  func jpegWithEveryEXIFOrientationComesOutUpright(_ orientation: Orientation, size: (Int, Int)) throws {
    // 96x64 takes the lossless tjTransform path (whole MCUs), 90x60 the decode path.
    let (w, h) = orientation.swapsDimensions ? (size.1, size.0) : size
    let input = try Fixtures.jpeg(
      Self.stored(orientation, width: size.0, height: size.1), orientation: orientation.rawValue)
    #expect(try JPEGMarkerWalker.read(input).exif?.orientationValue == orientation.rawValue)
    let result = try Pipeline().process(input)
    #expect(result.source.orientationSource == .exif && result.source.orientation == orientation.rawValue)
    #expect(result.source.width == w && result.source.height == h)
    try Self.expectUpright(result.jpeg, width: size.0, height: size.1)
  }

  @Test func perfectRotationOfFittingJPEGUsesTheLosslessPath() throws {
    let input = try Fixtures.jpeg(Self.stored(.right, width: 96, height: 64), orientation: 6)
    #expect(try Pipeline().process(input).losslessTransform)
    let odd = try Fixtures.jpeg(Self.stored(.right, width: 90, height: 60), orientation: 6)
    #expect(try !Pipeline().process(odd).losslessTransform)
  }

  @Test(arguments: Orientation.allCases)
  func pngWithEveryEXIfOrientationComesOutUpright(_ orientation: Orientation) throws {
    let input = Fixtures.png(
      Self.stored(orientation, width: 80, height: 50), orientation: orientation.rawValue)
    let result = try Pipeline().process(input)
    #expect(result.source.orientationSource == .exif && result.source.orientation == orientation.rawValue)
    try Self.expectUpright(result.jpeg, width: 80, height: 50)
  }

  @Test(.enabled(if: corpusPresent, "skipped: corpus not present"), arguments: 1...8)
  func webpEXIFChunkOrientationIsApplied(_ value: Int) throws {
    // The corpus WebP stores EXIF Orientation 6; rewriting the value gives the other seven. The
    // output for value v must be the value-1 output (the stored pixels) with v applied.
    let original = try corpusBytes("webp-exif-orient-6.webp")
    func withOrientation(_ v: Int) -> [UInt8] {
      let le = Fixtures.replacing(
        [0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x06],
        with: [0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, UInt8(v)],
        in: original)
      return Fixtures.replacing(
        [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06],
        with: [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, UInt8(v)], in: le)
    }
    let input = withOrientation(value)
    #expect(try WebPReader.read(input).exif?.orientationValue == value)
    let pipeline = try Pipeline()
    let storedLook = try JPEGCodec.decode(try pipeline.process(withOrientation(1)).jpeg)
    let result = try pipeline.process(input)
    #expect(result.source.orientation == value && result.source.orientationSource == .exif)
    let expected = Orienter.apply(Orientation(exifValue: value), to: storedLook)
    let got = try JPEGCodec.decode(result.jpeg)
    #expect(Fixtures.meanDifference(got, expected) < 4)
    if value != 1 {
      let wrong = Orienter.apply(Orientation(exifValue: value).followed(by: .down), to: storedLook)
      #expect(Fixtures.meanDifference(got, wrong) > 10)
    }
  }

  @Test func xmpOrientationIsIgnored() throws {
    let image = Fixtures.quadrants(width: 64, height: 48)
    let xmp = Array(
      "XML:com.adobe.xmp\0\0\0\0\0<x:xmpmeta><tiff:Orientation>6</tiff:Orientation></x:xmpmeta>".utf8)
    let input = Fixtures.png(image, extraChunks: [("iTXt", xmp)])
    let result = try Pipeline().process(input)
    #expect(result.source.orientationSource == OrientationSource.none)
    try Self.expectUpright(result.jpeg, width: 64, height: 48)
  }
}
