import ImageContainers
import Testing

@testable import ImagePipeline

@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct ContainerReaderTests {
  @Test func jpegWalkerReadsFrameAndMetadataOfIPhonePhoto() throws {
    let info = try JPEGMarkerWalker.read(try corpusBytes("jpeg-iphone6-gps.jpg"))
    #expect(info.width == 3264 && info.height == 2448)
    #expect(info.precision == 8 && info.components == 3 && !info.isProgressive)
    #expect(info.metadata.exif && info.metadata.gps && info.metadata.thumbnail)
    #expect(info.exif?.orientationValue == 1)
  }

  @Test(arguments: 1...8)
  func jpegWalkerReadsEveryOrientationValue(_ value: Int) throws {
    let info = try JPEGMarkerWalker.read(try corpusBytes("jpeg-orient-\(value).jpg"))
    #expect(info.exif?.rawOrientation == value)
    #expect(info.exif?.orientationValue == value)
  }

  @Test func outOfRangeOrientationCountsAsOne() throws {
    let info = try JPEGMarkerWalker.read(try corpusBytes("jpeg-orient-0-invalid-value.jpg"))
    #expect(info.exif?.rawOrientation == 0)
    #expect(info.exif?.orientationValue == 1)
  }

  @Test func malformedGPSOffsetStillReadsAndFlagsGPS() throws {
    let info = try JPEGMarkerWalker.read(try corpusBytes("jpeg-malformed-gps-ifd.jpg"))
    #expect(info.width == 1 && info.height == 1 && info.isProgressive)
    #expect(info.exif?.orientationValue == 1)
    #expect(info.exif?.hasGPS == true)
  }

  @Test func multiChunkICCProfileIsReassembledInOrder() throws {
    let info = try JPEGMarkerWalker.read(try corpusBytes("jpeg-progressive-multichunk-icc.jpg"))
    let profile = try #require(info.iccProfile)
    // An ICC profile starts with its own size, big-endian.
    let declared = profile.prefix(4).reduce(0) { $0 << 8 | Int($1) }
    #expect(declared == profile.count)
    #expect(profile[36..<40].elementsEqual("acsp".utf8))
  }

  @Test func twelveBitPrecisionAndArithmeticCodingAreVisibleInTheHeader() throws {
    #expect(try JPEGMarkerWalker.read(try corpusBytes("jpeg-12bit-precision.jpg")).precision == 12)
    #expect(try JPEGMarkerWalker.read(try corpusBytes("jpeg-arithmetic-coding.jpg")).isArithmetic)
  }

  @Test func adobeTransformOfYCCKFileIsRead() throws {
    let info = try JPEGMarkerWalker.read(try corpusBytes("jpeg-cmyk-adobe-ycck-photoshop.jpg"))
    #expect(info.components == 4 && info.adobeTransform == 2)
  }

  @Test func headerWithoutFrameIsRejected() throws {
    #expect(throws: JPEGMarkerWalker.Failure.self) {
      try JPEGMarkerWalker.read(try corpusBytes("jpeg-corrupt-header.jpg"))
    }
  }

  @Test func pngWalkerReadsIHDRAndText() throws {
    let bomb = try PNGChunkWalker.read(try corpusBytes("png-bomb-16383x16383.png"))
    #expect(bomb.width == 16383 && bomb.height == 16383 && bomb.bitDepth == 1 && bomb.colourType == 3)
    let ztxt = try PNGChunkWalker.read(try corpusBytes("png-ztxt-decompression-bomb.png"))
    #expect(ztxt.textChunks == 3 && ztxt.textBytes > 0)
    let exif = try PNGChunkWalker.read(try corpusBytes("png-exif-chunk.png"))
    #expect(exif.exif?.orientationValue == 1)
    let p3 = try PNGChunkWalker.read(try corpusBytes("png-icc-display-p3.png"))
    #expect(p3.compressedICCProfile != nil && p3.hasAlphaChannel)
  }

  @Test func pngCRCErrorIsCountedWhenAsked() throws {
    let info = try PNGChunkWalker.read(try corpusBytes("png-bad-crc.png"), checkCRC: true)
    #expect(info.crcErrors == 1)
    let good = try PNGChunkWalker.read(try corpusBytes("png-rgba16.png"), checkCRC: true)
    #expect(good.crcErrors == 0 && good.hasIEND)
    let cut = try PNGChunkWalker.read(try corpusBytes("png-truncated.png"))
    #expect(!cut.hasIEND)
  }

  @Test func webpReaderReadsCanvasAndChunks() throws {
    let flower = try WebPReader.read(try corpusBytes("webp-lossy-icc-exif-xmp.webp"))
    #expect(flower.width == 300 && flower.height == 225 && flower.iccProfile != nil && flower.metadata.xmp)
    #expect(try WebPReader.read(try corpusBytes("webp-exif-orient-6.webp")).exif?.orientationValue == 6)
    let lossless = try WebPReader.read(try corpusBytes("webp-lossless-alpha.webp"))
    #expect(lossless.isLossless && lossless.hasAlpha && lossless.width == 2048 && lossless.height == 1536)
    #expect(try WebPReader.read(try corpusBytes("webp-animated-lossy-alpha.webp")).isAnimated)
    #expect(try WebPReader.read(try corpusBytes("webp-truncated.webp")).isTruncated)
  }

  @Test func gifReaderFindsFrameOutsideLogicalScreen() throws {
    let bomb = try GIFHeaderReader.read(try corpusBytes("gif-bomb-frame-extents.gif"))
    #expect(bomb.width == 32 && bomb.height == 32 && !bomb.firstFrameFitsScreen)
    let frames = try GIFHeaderReader.read(try corpusBytes("gif-1024-frames-1x1.gif"))
    #expect(frames.frameCount == 1024 && frames.firstFrameFitsScreen)
    let few = try GIFHeaderReader.read(try corpusBytes("gif-1024-frames-1x1.gif"), maxFrames: 10)
    #expect(few.frameCount == 10)
  }
}
