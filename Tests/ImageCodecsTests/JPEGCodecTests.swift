import ImageCodecs
import TestSupport
import Testing

@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct JPEGCodecTests {
  @Test func headerReportsSizeSubsamplingAndProcess() throws {
    let nikon = try JPEGCodec.readHeader(Fixtures.corpus("jpeg-nikon-d70s-gps-portrait.jpg"))
    #expect(nikon.width == 1488 && nikon.height == 2240)
    #expect(nikon.subsampling == .s440)
    #expect(nikon.colourSpace == .ycbcr && nikon.precision == 8 && nikon.process == .baseline)
    let progressive = try JPEGCodec.readHeader(Fixtures.corpus("jpeg-progressive-multichunk-icc.jpg"))
    #expect(progressive.process == .progressive)
    let gray = try JPEGCodec.readHeader(Fixtures.corpus("jpeg-grayscale-gray-icc.jpg"))
    #expect(gray.colourSpace == .gray && gray.subsampling == .gray)
    let cmyk = try JPEGCodec.readHeader(Fixtures.corpus("jpeg-cmyk-ycck-orient-6.jpg"))
    #expect(cmyk.colourSpace == .ycck && cmyk.isCMYK && cmyk.hasAdobeMarker)
  }

  @Test func baselineDecodesToRGBAtFullSize() throws {
    let buffer = try JPEGCodec.decode(Fixtures.corpus("jpeg-orient-1.jpg"))
    #expect(buffer.width == 1800 && buffer.height == 1200 && buffer.layout == .rgb)
    #expect(buffer.bytes.count == 1800 * 1200 * 3)
  }

  @Test(arguments: [
    ("jpeg-arithmetic-coding.jpg", 227, 149), ("jpeg-progressive-multichunk-icc.jpg", 425, 250),
    ("jpeg-single-quant-table.jpg", 300, 400), ("jpeg-malformed-gps-ifd.jpg", 1, 1),
    ("jpeg-grayscale-gray-icc.jpg", 400, 267),
  ])
  func unusualButValidFilesDecode(name: String, width: Int, height: Int) throws {
    let buffer = try JPEGCodec.decode(Fixtures.corpus(name))
    #expect(buffer.width == width && buffer.height == height)
    // Not a flat grey failure image: the picture has some contrast.
    let values = buffer.bytes.prefix(buffer.rowBytes * buffer.height)
    #expect(width * height == 1 || values.max()! - values.min()! > 50)
  }

  @Test func grayscaleStaysOneChannel() throws {
    let buffer = try JPEGCodec.decode(Fixtures.corpus("jpeg-grayscale-gray-icc.jpg"))
    #expect(buffer.layout == .gray && buffer.rowBytes == 400)
  }

  @Test func shrinkOnLoadPicksTheSmallestScaleStillCoveringTheTarget() throws {
    let data = try Fixtures.corpus("jpeg-huge-9643x10328.jpg")
    let size = JPEGCodec.scaledSize(width: 9643, height: 10328, toAtLeast: (1912, 2048))
    #expect(size.width == 2411 && size.height == 2582)  // 2/8; 1/8 would be 1206x1291
    let buffer = try JPEGCodec.decode(data, scaleToAtLeast: (1912, 2048))
    #expect(buffer.width == 2411 && buffer.height == 2582)
    #expect(JPEGCodec.scaledSize(width: 100, height: 80, toAtLeast: (200, 200)) == (100, 80))
    #expect(JPEGCodec.scaledSize(width: 800, height: 600, toAtLeast: (100, 75)) == (100, 75))
    #expect(JPEGCodec.scaledSize(width: 800, height: 600, toAtLeast: (101, 75)) == (200, 150))
  }

  @Test(arguments: [
    "jpeg-truncated-half.jpg", "jpeg-pixel6-ultrahdr-gps-truncated.jpg", "jpeg-truncated-progressive.jpg",
  ])
  func truncatedFilesFailInsteadOfPaddingGrey(name: String) throws {
    let error = try #require(throws: CodecError.self) { try JPEGCodec.decode(Fixtures.corpus(name)) }
    #expect(error.kind == .truncated)
  }

  @Test func brokenHeadersFail() throws {
    for name in ["jpeg-corrupt-header.jpg", "jpeg-1-byte.jpg", "not-image-pdf.jpg"] {
      let error = try #require(throws: CodecError.self) { try JPEGCodec.readHeader(Fixtures.corpus(name)) }
      #expect(error.kind == .corrupt || error.kind == .truncated)
    }
  }

  @Test func twelveBitPrecisionIsUnsupported() throws {
    let data = try Fixtures.corpus("jpeg-12bit-precision.jpg")
    let error = try #require(throws: CodecError.self) { try JPEGCodec.decode(data) }
    #expect(error.kind == .unsupported)
  }

  @Test func adobeCMYKIsNotNegative() throws {
    // Photoshop YCCK: red "RED" lettering and a red frame on a black ground. An un-inverted
    // decode gives a light ground and dark lettering instead.
    let sample = try JPEGCodec.decode(Fixtures.corpus("jpeg-cmyk-adobe-ycck-photoshop.jpg"))
    #expect(sample.layout == .rgb && sample.width == 100)
    let ground = Fixtures.mean(sample, x: 40..<60, y: 10..<20)
    let frame = Fixtures.pixel(sample, 2, 2)
    #expect(ground.allSatisfy { $0 < 60 }, "\(ground)")
    #expect(frame[0] > 180 && frame[1] < 80, "\(frame)")
    // A portrait on dark foliage in a black sweater: the sweater (bottom centre) is dark, the
    // face (centre top) is light and reddish.
    let portrait = try JPEGCodec.decode(Fixtures.corpus("jpeg-cmyk-ycck-orient-6.jpg"))
    let sweater = Fixtures.mean(portrait, x: 380..<420, y: 480..<520)
    let face = Fixtures.mean(portrait, x: 380..<420, y: 180..<200)
    #expect(sweater.allSatisfy { $0 < 40 })
    #expect(face[0] > 150 && face[0] > face[2])
  }

  @Test func cmykThroughItsEmbeddedProfileMatchesThumbor() throws {
    let data = try Fixtures.corpus("jpeg-cmyk-swop-icc.jpg")
    let profile = try #require(JPEGCodec.iccProfile(data))
    #expect(profile.count == 557_168)
    let buffer = try JPEGCodec.decode(data, iccProfile: profile)
    let mean = Fixtures.mean(buffer, x: 0..<buffer.width, y: 0..<buffer.height)
    for (got, want) in zip(mean, [148.0, 212, 212]) { #expect(abs(got - want) <= 3) }
  }
}

@Suite struct JPEGEncodeTests {
  @Test func encodeThenDecodeKeepsThePicture() throws {
    let original = Fixtures.gradient(width: 160, height: 120)
    for (subsampling, floor) in [(JPEGCodec.EncodeSubsampling.s420, 30.0), (.s444, 34)] {
      let jpeg = try JPEGCodec.encode(original, quality: 90, subsampling: subsampling)
      let info = try JPEGCodec.readHeader(jpeg)
      #expect(info.subsampling == (subsampling == .s420 ? .s420 : .s444))
      let decoded = try JPEGCodec.decode(jpeg)
      #expect(Fixtures.psnr(original, decoded) > floor)
    }
  }

  @Test func encodeIsByteDeterministic() throws {
    let buffer = Fixtures.gradient(width: 97, height: 61)
    #expect(try JPEGCodec.encode(buffer, quality: 85) == JPEGCodec.encode(buffer, quality: 85))
  }

  @Test func encodeWritesNoMetadataSegments() throws {
    let jpeg = try JPEGCodec.encode(Fixtures.gradient(width: 64, height: 48), quality: 85)
    // SOI then APP0 "JFIF"; no APP1…APP15 or COM anywhere before the scan.
    #expect(Array(jpeg.prefix(4)) == [0xFF, 0xD8, 0xFF, 0xE0])
    var i = 2
    while i + 4 <= jpeg.count, jpeg[i + 1] != 0xDA {
      #expect(!(0xE1...0xEF).contains(jpeg[i + 1]) && jpeg[i + 1] != 0xFE)
      i += 2 + Int(jpeg[i + 2]) << 8 + Int(jpeg[i + 3])
    }
    #expect(Array(jpeg.suffix(2)) == [0xFF, 0xD9])
  }

  @Test func grayEncodesAsOneComponent() throws {
    let gray = Fixtures.gradient(width: 40, height: 30, layout: .gray)
    let info = try JPEGCodec.readHeader(JPEGCodec.encode(gray, quality: 85))
    #expect(info.colourSpace == .gray)
  }

  @Test func alphaIsRefusedRatherThanDropped() throws {
    let rgba = Fixtures.gradient(width: 8, height: 8, layout: .rgba)
    #expect(throws: CodecError.self) { try JPEGCodec.encode(rgba, quality: 85) }
  }

  @Test func losslessRotationIsExact() throws {
    // 4:2:0 needs 16×16 MCUs for every operation to be perfect: 64×48 is a multiple.
    let source = Fixtures.gradient(width: 64, height: 48)
    let jpeg = try JPEGCodec.encode(source, quality: 90)
    let decoded = try JPEGCodec.decode(jpeg)
    for operation in JPEGCodec.Operation.allCases {
      let rotated = try JPEGCodec.decode(JPEGCodec.transform(jpeg, operation: operation))
      let expected = Fixtures.apply(operation, to: decoded)
      #expect(rotated.width == expected.width && rotated.height == expected.height)
      // Lossless in the DCT domain; the decoder's chroma upsampling may differ by a level or two
      // at block edges after rearrangement, so compare within a tight PSNR.
      #expect(Fixtures.psnr(rotated, expected) > 45, "\(operation)")
    }
  }

  @Test func imperfectTransformIsReportedNotTrimmed() throws {
    let jpeg = try JPEGCodec.encode(Fixtures.gradient(width: 70, height: 50), quality: 90)
    let info = try JPEGCodec.readHeader(jpeg)
    #expect(!JPEGCodec.isPerfect(.rot90, for: info) && JPEGCodec.isPerfect(.transpose, for: info))
    let error = try #require(throws: CodecError.self) { try JPEGCodec.transform(jpeg, operation: .rot90) }
    #expect(error.kind == .unsupported)
    let trimmed = try JPEGCodec.readHeader(JPEGCodec.transform(jpeg, operation: .rot90, perfectOnly: false))
    #expect(trimmed.width == 48 && trimmed.height == 70)
  }
}
