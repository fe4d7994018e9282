import ImageCodecs
import TestSupport
import Testing

/// Every corpus file the manifest expects to be accepted decodes at its stored size (the HEIF
/// ones at their transformed size), and every header agrees with the manifest.
@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct CorpusSweepTests {
  static let acceptedJPEGs: [(String, Int, Int)] = [
    ("jpeg-orient-0-invalid-value.jpg", 1800, 1200), ("jpeg-orient-1.jpg", 1800, 1200),
    ("jpeg-orient-2.jpg", 1800, 1200), ("jpeg-orient-3.jpg", 1800, 1200), ("jpeg-orient-4.jpg", 1800, 1200),
    ("jpeg-orient-5.jpg", 1200, 1800), ("jpeg-orient-6.jpg", 1200, 1800), ("jpeg-orient-7.jpg", 1200, 1800),
    ("jpeg-orient-8.jpg", 1200, 1800), ("jpeg-iphone6-gps.jpg", 3264, 2448),
    ("jpeg-nikon-d70s-gps-portrait.jpg", 1488, 2240), ("jpeg-canon-sx60-orient-6.jpg", 2048, 1536),
    ("jpeg-nokia83-gps.jpg", 4608, 1976), ("jpeg-cmyk-ycck-orient-6.jpg", 800, 533),
    ("jpeg-cmyk-adobe-ycck-photoshop.jpg", 100, 100), ("jpeg-cmyk-swop-icc.jpg", 388, 218),
    ("jpeg-progressive-multichunk-icc.jpg", 425, 250), ("jpeg-grayscale-gray-icc.jpg", 400, 267),
    ("jpeg-icc-adobe-rgb-1998.jpg", 2000, 1072), ("jpeg-icc-p3-d65.jpg", 1000, 800),
    ("jpeg-icc-rgb-to-gbr-swap.jpg", 1000, 1000), ("jpeg-arithmetic-coding.jpg", 227, 149),
    ("jpeg-malformed-gps-ifd.jpg", 1, 1), ("jpeg-single-quant-table.jpg", 300, 400),
  ]

  @Test(arguments: acceptedJPEGs)
  func acceptedJPEGDecodesWithoutWarnings(name: String, width: Int, height: Int) throws {
    let data = try Fixtures.corpus(name)
    let buffer = try JPEGCodec.decode(data, iccProfile: JPEGCodec.iccProfile(data))
    #expect(buffer.width == width && buffer.height == height)
    #expect(buffer.layout == (name.contains("gray") ? .gray : .rgb))
  }

  @Test func hugeJPEGHeadersReadWithoutDecoding() throws {
    let huge = try JPEGCodec.readHeader(Fixtures.corpus("jpeg-huge-9643x10328.jpg"))
    #expect(huge.width == 9643 && huge.height == 10328)
    let bomb = try JPEGCodec.readHeader(Fixtures.corpus("jpeg-bomb-20000x14000.jpg"))
    #expect(bomb.width == 20000 && bomb.height == 14000 && bomb.colourSpace == .gray)
  }

  @Test(arguments: [
    ("heic-iphone7plus-exif6-no-irot.heic", 4032, 3024), ("heic-nokia83-irot-exif1-gps.heif", 3456, 4608),
    ("heic-xiaomi-large-exif-gps.heic", 2592, 1944), ("heic-misnamed-as.jpg", 128, 128),
    ("avif-10bit-icc.avif", 800, 800), ("avif-iphone-gps-p3.avif", 3024, 4032),
  ])
  func acceptedHEIFDecodes(name: String, width: Int, height: Int) throws {
    let image = try HEIFCodec.decode(Fixtures.corpus(name))
    #expect(image.pixels.width == width && image.pixels.height == height)
  }

  @Test func avifColorSpinCanaryPutsRedAtTwelveOClock() throws {
    let image = try HEIFCodec.decode(Fixtures.corpus("avif-10bit-icc.avif"))
    var pixels = image.pixels
    let icc = try #require(image.info.colour.iccProfile)
    let before = Fixtures.mean(pixels, x: 390..<410, y: 60..<80)
    #expect(before[2] > before[0] + 80, "without the profile the top is blue: \(before)")
    #expect(ColourTransform.toSRGB(&pixels, iccProfile: icc) == .converted)
    let top = Fixtures.mean(pixels, x: 390..<410, y: 60..<80)
    #expect(top[0] > 180 && top[0] > top[1] + 80 && top[0] > top[2] + 80, "before \(before), after \(top)")
  }
}
