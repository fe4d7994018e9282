import ImageCodecs
import TestSupport
import Testing

@Suite struct PNGGeneratedTests {
  @Test func generatedRGBDecodesExactly() throws {
    let source = Fixtures.gradient(width: 23, height: 17)
    let png = PNGWriter.png(width: 23, height: 17, colourType: 2, pixels: source.bytes)
    let decoded = try PNGCodec.decode(png)
    #expect(decoded.layout == .rgb && decoded.width == 23 && decoded.height == 17)
    #expect(decoded.bytes == source.bytes)
  }

  @Test func generatedGrayStaysGrayAndRGBAKeepsStraightAlpha() throws {
    let gray = Fixtures.gradient(width: 9, height: 5, layout: .gray)
    let decodedGray = try PNGCodec.decode(
      PNGWriter.png(width: 9, height: 5, colourType: 0, pixels: gray.bytes))
    #expect(decodedGray.layout == .gray && decodedGray.bytes == gray.bytes)
    let rgba: [UInt8] = [255, 0, 0, 128, 0, 0, 0, 0]
    let decoded = try PNGCodec.decode(PNGWriter.png(width: 2, height: 1, colourType: 6, pixels: rgba))
    #expect(decoded.layout == .rgba && decoded.bytes == rgba && !decoded.premultiplied)
  }

  @Test func sixteenBitSamplesWithoutGammaAreReadAsSRGB() throws {
    // Gray 0x0000, 0x8080, 0xFFFF, 0x4040: sRGB-encoded, so 8-bit 0, 128, 255, 64. Read as linear
    // (libpng's simplified-API default) 0x8080 would come out near 188.
    let samples: [UInt8] = [0x00, 0x00, 0x80, 0x80, 0xFF, 0xFF, 0x40, 0x40]
    let png = PNGWriter.png(width: 4, height: 1, colourType: 0, pixels: samples, bitDepth: 16)
    let decoded = try PNGCodec.decode(png)
    #expect(decoded.layout == .gray)
    for (got, want) in zip(decoded.bytes, [0, 128, 255, 64]) {
      #expect(abs(Int(got) - want) <= 1, "\(decoded.bytes)")
    }
  }

  @Test func shortImageDataWithAValidStructureFails() throws {
    // All chunks and CRCs are valid, but the zlib stream stops halfway: libpng only warns
    // ("Not enough image data") and pads; we fail.
    let source = Fixtures.gradient(width: 32, height: 32)
    let png = PNGWriter.png(width: 32, height: 32, colourType: 2, pixels: source.bytes, idatLimit: 1_500)
    let error = try #require(throws: CodecError.self) { try PNGCodec.decode(png) }
    #expect(error.kind == .corrupt)
  }

  @Test func textChunksAreNeverHandedToLibpng() throws {
    // A 1 MB tEXt chunk before IDAT (ancillary; libpng would allocate for it) does not matter.
    let text = Array("Comment".utf8) + [0] + [UInt8](repeating: 0x41, count: 1 << 20)
    let png = PNGWriter.png(width: 1, height: 1, colourType: 0, pixels: [7], extraChunks: [("tEXt", text)])
    #expect(try PNGCodec.decode(png).bytes == [7])
  }

  @Test func inflateHonoursItsOutputCap() throws {
    // A stored-block zlib stream of 1000 zero bytes (from the PNG writer: one filter byte + 999).
    let png = PNGWriter.png(width: 999, height: 1, colourType: 0, pixels: [UInt8](repeating: 0, count: 999))
    let chunks = png[33...]  // IDAT length at 33, type at 37, data from 41
    let length = Int(chunks[33]) << 24 | Int(chunks[34]) << 16 | Int(chunks[35]) << 8 | Int(chunks[36])
    let zlib = Array(png[41..<41 + length])
    #expect(try Inflate.decompress(zlib, maxOutput: 1000).count == 1000)
    let capped = try #require(throws: CodecError.self) { try Inflate.decompress(zlib, maxOutput: 999) }
    #expect(capped.kind == .tooLarge)
    let cut = try #require(throws: CodecError.self) {
      try Inflate.decompress(Array(zlib.prefix(500)), maxOutput: 2000)
    }
    #expect(cut.kind == .truncated)
    #expect(throws: CodecError.self) { try Inflate.decompress([0x78, 0x01, 0xFF, 0xFF], maxOutput: 10) }
  }
}

@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct PNGCorpusTests {
  @Test(arguments: [
    ("png-rgba16.png", 32, 32, PixelBuffer.Layout.rgba), ("png-palette-trns.png", 32, 32, .rgba),
    ("png-interlaced-adam7-rgba.png", 32, 32, .rgba), ("png-exif-chunk.png", 32, 32, .rgb),
    ("png-legacy-raw-exif-orient-3.png", 512, 512, .rgb), ("png-icc-display-p3.png", 8, 8, .rgba),
    ("png-rgba8-transparent-ink.png", 2048, 1536, .rgba), ("png-ztxt-decompression-bomb.png", 1, 1, .gray),
  ])
  func corpusFilesDecode(name: String, width: Int, height: Int, layout: PixelBuffer.Layout) throws {
    let buffer = try PNGCodec.decode(Fixtures.corpus(name))
    #expect(buffer.width == width && buffer.height == height && buffer.layout == layout)
  }

  @Test func headerIsReadWithoutDecoding() throws {
    let bomb = try PNGCodec.readHeader(Fixtures.corpus("png-bomb-16383x16383.png"))
    #expect(bomb.width == 16383 && bomb.height == 16383 && bomb.colourType == .palette && bomb.bitDepth == 1)
    let interlaced = try PNGCodec.readHeader(Fixtures.corpus("png-interlaced-adam7-rgba.png"))
    #expect(interlaced.interlaced && interlaced.hasTransparency)
    let sixteen = try PNGCodec.readHeader(Fixtures.corpus("png-rgba16.png"))
    #expect(sixteen.bitDepth == 16 && sixteen.colourType == .rgba)
  }

  @Test func transparentInkKeepsItsAlpha() throws {
    let buffer = try PNGCodec.decode(Fixtures.corpus("png-rgba8-transparent-ink.png"))
    let alphas = stride(from: 3, to: buffer.bytes.count, by: 4).lazy.map { buffer.bytes[$0] }
    #expect(alphas.contains(0) && alphas.contains(255))
  }

  @Test func sixteenBitIsReducedToEightBit() throws {
    let buffer = try PNGCodec.decode(Fixtures.corpus("png-rgba16.png"))
    #expect(buffer.bytes.count == 32 * 32 * 4)
    #expect(Set(buffer.bytes).count > 16)  // a real gradient, not a constant
  }

  @Test func iccProfileIsInflatedFromICCP() throws {
    let profile = try #require(try PNGCodec.iccProfile(Fixtures.corpus("png-icc-display-p3.png")))
    #expect(ColourTransform.describe(iccProfile: profile)?.description.contains("P3") == true)
    #expect(try PNGCodec.iccProfile(Fixtures.corpus("png-rgba16.png")) == nil)
    let capped = try #require(throws: CodecError.self) {
      try PNGCodec.iccProfile(Fixtures.corpus("png-icc-display-p3.png"), maxBytes: 100)
    }
    #expect(capped.kind == .tooLarge)
  }

  @Test func exifChunkIsReturnedRaw() throws {
    let exif = try #require(try PNGCodec.exif(Fixtures.corpus("png-exif-chunk.png")))
    #expect(exif.prefix(2) == [0x4D, 0x4D] || exif.prefix(2) == [0x49, 0x49])
  }

  @Test func damagedFilesFailWithTheRightKind() throws {
    let truncated = try #require(throws: CodecError.self) {
      try PNGCodec.decode(Fixtures.corpus("png-truncated.png"))
    }
    #expect(truncated.kind == .truncated)
    let crc = try #require(throws: CodecError.self) {
      try PNGCodec.decode(Fixtures.corpus("png-bad-crc.png"))
    }
    #expect(crc.kind == .corrupt)
    let signature = try #require(throws: CodecError.self) {
      try PNGCodec.decode(Fixtures.corpus("png-bad-signature.png"))
    }
    #expect(signature.kind == .corrupt)
  }
}
