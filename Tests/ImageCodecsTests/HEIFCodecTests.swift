import Foundation
import ImageCodecs
import TestSupport
import Testing

@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct HEIFCodecTests {
  @Test func iPhoneGridDecodesThePrimaryImageWithItsDisplayP3Profile() throws {
    let image = try HEIFCodec.decode(Fixtures.corpus("heic-iphone13pro-grid-depth-gps.heic"))
    #expect(image.pixels.width == 4032 && image.pixels.height == 3024 && image.pixels.layout == .rgb)
    let icc = try #require(image.info.colour.iccProfile)
    #expect(ColourTransform.describe(iccProfile: icc)?.description.contains("P3") == true)
    #expect(image.info.bitDepth == 8 && !image.info.hasAlpha)
  }

  @Test func irotIsAppliedUnlessIgnored() throws {
    let data = try Fixtures.corpus("heic-iphonexs-irot-exif6-gps.heic")
    let info = try HEIFCodec.primaryInfo(data)
    #expect(info.storedWidth == 4032 && info.storedHeight == 3024)
    let upright = try HEIFCodec.decode(data)
    #expect(upright.pixels.width == 3024 && upright.pixels.height == 4032)
    let stored = try HEIFCodec.decode(data, options: .init(ignoreTransformations: true))
    #expect(stored.pixels.width == 4032 && stored.pixels.height == 3024)
    // The stored image rotated 90° clockwise is the upright one: compare one pixel.
    let (x, y) = (100, 200)  // in the upright image
    let rotatedSource = Fixtures.pixel(stored.pixels, y, stored.pixels.height - 1 - x)
    #expect(zip(Fixtures.pixel(upright.pixels, x, y), rotatedSource).allSatisfy { abs($0 - $1) <= 2 })
  }

  @Test func avifCropRotateMirrorGivesTheCleanAperture() throws {
    let image = try HEIFCodec.decode(Fixtures.corpus("avif-irot-imir-clap.avif"))
    #expect(image.pixels.width == 385 && image.pixels.height == 330)
    let rotated = try HEIFCodec.decode(Fixtures.corpus("avif-irot-90cw.avif"))
    #expect(rotated.pixels.width == 722 && rotated.pixels.height == 1024)
  }

  @Test(arguments: [
    ("heic-alpha-8bit.heif", 128, 128, 8), ("heic-alpha-10bit-odd-size.heif", 29, 100, 10),
    ("avif-10bit-alpha.avif", 2048, 2048, 10),
  ])
  func alphaImagesDecodeToEightBitRGBA(name: String, width: Int, height: Int, depth: Int) throws {
    let image = try HEIFCodec.decode(Fixtures.corpus(name))
    #expect(image.info.hasAlpha && image.info.bitDepth == depth)
    #expect(image.pixels.layout == .rgba && image.pixels.width == width && image.pixels.height == height)
    #expect(image.pixels.premultiplied == image.info.premultipliedAlpha)
    let alphas = stride(from: 3, to: image.pixels.bytes.count, by: 4).map { image.pixels.bytes[$0] }
    #expect(alphas.min()! < 128 && alphas.max()! > 200)  // transparent and near-opaque parts
  }

  @Test func tenBitSonyWithNCLXComesOutEightBit() throws {
    let image = try HEIFCodec.decode(Fixtures.corpus("heic-sony-a7s3-10bit.hif"))
    #expect(image.info.bitDepth == 10 && image.pixels.layout == .rgb)
    #expect(image.pixels.width == 4240 && image.pixels.height == 2832)
    let nclx = try #require(image.info.colour.nclx)
    #expect(nclx.colourPrimaries == 1 && nclx.fullRange)
  }

  @Test func multiImageFileDecodesOnlyThePrimary() throws {
    let image = try HEIFCodec.decode(Fixtures.corpus("heic-multi-image-thumbnails.heic"))
    #expect(image.info.topLevelImageCount == 3)
    #expect(image.pixels.width == 64 && image.pixels.height == 64)
    #expect(image.info.colour.iccProfile == nil)  // the ICC belongs to a non-primary item
  }

  @Test(arguments: [
    "heic-truncated.heic", "heic-corrupt-canon-10bit.hif", "heic-empty-0-bytes.heic", "avif-truncated.avif",
  ])
  func truncatedFilesFailCleanly(name: String) throws {
    let error = try #require(throws: CodecError.self) { try HEIFCodec.decode(Fixtures.corpus(name)) }
    #expect(error.kind == .truncated)
  }

  @Test func oversizedImageIsRefusedBeforeDecoding() throws {
    let data = try Fixtures.corpus("avif-bomb-17000x17000.avif")
    let error = try #require(throws: CodecError.self) { try HEIFCodec.primaryInfo(data) }
    #expect(error.kind == .tooLarge)
    let small = try Fixtures.corpus("heic-alpha-8bit.heif")
    let limited = try #require(throws: CodecError.self) {
      try HEIFCodec.decode(small, options: .init(maximumDimension: 100))
    }
    #expect(limited.kind == .tooLarge)
  }

  @Test func unsupportedStructuresFailAsErrors() throws {
    for name in [
      "avif-sequence-animated-alpha.avifs", "heic-iphone16-hdr-gainmap-gps.heic", "not-image-pdf.jpg",
    ] {
      #expect(throws: CodecError.self) { try HEIFCodec.decode(Fixtures.corpus(name)) }
    }
  }
}

/// Slow: the 200 MP Samsung photo (~600 MB of RGB). Run with ATTACHD_SLOW_TESTS=1.
@Suite(
  .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
  .enabled(
    if: ProcessInfo.processInfo.environment["ATTACHD_SLOW_TESTS"] != nil, "slow: set ATTACHD_SLOW_TESTS=1"))
struct HEIFSlowTests {
  @Test func twoHundredMegapixelSamsungDecodes() throws {
    let data = try Fixtures.corpus("heic-samsung-200mp-irot.heic")
    let start = ContinuousClock.now
    let image = try HEIFCodec.decode(data)
    print("200 MP decode:", ContinuousClock.now - start)
    #expect(image.pixels.width == 12240 && image.pixels.height == 16320)
  }
}
