import ImageCodecs
import ImageContainers
import TestSupport
import Testing

@testable import ImagePipeline

/// Gray sources (Tests/Fixtures/decoders, Scripts/make-decoder-fixtures) come out right and stay
/// one gray component: limited-range monochrome AVIF and HEIC on every path that decodes them
/// (libheif 1.15 left the plane in video range: 16 + 0.86·Y), 16-bit gray PNGs, gray JPEGs.
@Suite(.timeLimit(.minutes(2)))
struct MonochromeOutputTests {
  static func process(
    _ name: String, fastPath: Bool = true, maxEdge: Int = 2048, profiles: [ModelProfile] = []
  ) throws -> ProcessedImage {
    var configuration = Pipeline.Configuration()
    configuration.hevcFastPath = fastPath
    configuration.maxEdge = maxEdge
    return try Pipeline(configuration: configuration).process(DecoderFixtures.bytes(name), profiles: profiles)
  }

  /// The picture every mono-* fixture codes, full range.
  static func reference(width: Int = 96, height: Int = 64) throws -> PixelBuffer {
    let picture = try PNGCodec.decode(DecoderFixtures.bytes("mono-reference.png"))
    guard (width, height) != (picture.width, picture.height) else { return picture }
    return try Resampler.resize(picture, width: width, height: height, checkpoint: .never)
  }

  /// The output decoded, after checking it is a verified one-component JFIF JPEG.
  static func grayOutput(_ result: ProcessedImage) throws -> PixelBuffer {
    try JPEGOutputVerifier.verify(result.jpeg)
    let info = try JPEGCodec.readHeader(result.jpeg)
    #expect(info.colourSpace == .gray && info.subsampling == .gray)
    #expect(try JPEGMarkerWalker.read(result.jpeg).components == 1)
    return try JPEGCodec.decode(result.jpeg)
  }

  @Test(arguments: [
    ("mono8-limited.avif", true), ("mono10-limited.avif", true), ("mono12-limited.avif", true),
    ("mono8-full.avif", true), ("mono8-limited.heic", true), ("mono10-limited.heic", true),
    ("mono12-limited.heic", true), ("mono8-limited.heic", false), ("mono10-limited.heic", false),
  ])
  func monochromeHEIFIsFullRangeGray(name: String, fastPath: Bool) throws {
    let result = try Self.process(name, fastPath: fastPath)
    #expect((result.width, result.height) == (96, 64))
    let psnr = Self.psnr(try Self.grayOutput(result), try Self.reference())
    #expect(psnr >= 30, "\(name) (fast path \(fastPath)): \(psnr) dB")
  }

  @Test(arguments: [
    ("mono8-limited.heic", true), ("mono10-limited.avif", true), ("mono8-limited.heic", false),
  ])
  func resizedMonochromeStaysGray(name: String, fastPath: Bool) throws {
    // Resized: the HEVC path's planes are resampled and encoded from the luma plane alone.
    let result = try Self.process(name, fastPath: fastPath, maxEdge: 48)
    #expect((result.width, result.height) == (48, 32))
    let psnr = Self.psnr(try Self.grayOutput(result), try Self.reference(width: 48, height: 32))
    #expect(psnr >= 30, "\(name): \(psnr) dB")
  }

  @Test func grayWithAlphaFlattenedOntoWhiteIsStillOneComponent() throws {
    let result = try Self.process("png16-greyalpha-adam7.png")
    let gray = try Self.grayOutput(result)
    let twin = try Self.grayOutput(try Self.process("png16-greyalpha.png"))
    #expect(Self.psnr(gray, twin) >= 30)
  }

  @Test func grayRenditionsAreGrayOnBothPaths() throws {
    // A gray JPEG that fits takes the lossless path (renditions from its output); a gray PNG
    // with alpha the standard one (renditions from the flattened pixels).
    let picture = Self.grayGradient(width: 1200, height: 1000)
    let jpeg = try JPEGCodec.encode(picture, quality: 90, subsampling: .gray)
    let png = PNGWriter.png(
      width: 1200, height: 1000, colourType: 4, pixels: picture.bytes.flatMap { [$0, 200] })
    for (input, lossless) in [(jpeg, true), (png, false)] {
      let result = try Pipeline().process(input, profiles: [.openai])
      #expect(result.losslessTransform == lossless)
      _ = try Self.grayOutput(result)
      let rendition = try #require(result.renditions.first)
      #expect((rendition.width, rendition.height) == (922, 768))
      try JPEGOutputVerifier.verify(rendition.jpeg)
      #expect(try JPEGCodec.readHeader(rendition.jpeg).subsampling == .gray)
    }
  }

  /// PSNR of two tightly packed images of one shape (0 when the shapes differ).
  static func psnr(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    guard (a.width, a.height, a.layout) == (b.width, b.height, b.layout), a.bytes.count == b.bytes.count
    else {
      return 0
    }
    return ImageCompare.psnr(a.bytes, b.bytes)
  }

  /// A gray ramp with a checkerboard, big enough for a rendition.
  static func grayGradient(width: Int, height: Int) -> PixelBuffer {
    var bytes = [UInt8](repeating: 0, count: width * height)
    for y in 0..<height {
      for x in 0..<width {
        bytes[y * width + x] = UInt8((x * 180 / width + (x / 64 + y / 64) % 2 * 60) & 0xFF)
      }
    }
    return PixelBuffer(width: width, height: height, layout: .gray, bytes: bytes)
  }
}
