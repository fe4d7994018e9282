import ImageCodecs
import TestSupport
import Testing

@Suite struct GIFGeneratedTests {
  static let palette: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255]  // red green blue white

  @Test func fullFrameDecodesToRGBWithItsPalette() throws {
    let indices: [UInt8] = [0, 1, 2, 3, 3, 2]
    let gif = GIFWriter.gif(
      screen: (3, 2), frame: (0, 0, 3, 2), indices: indices, palette: Self.palette)
    let buffer = try GIFCodec.decode(gif)
    #expect(buffer.layout == .rgb && buffer.width == 3 && buffer.height == 2)
    #expect(buffer.bytes == indices.flatMap { Array(Self.palette[Int($0) * 3..<Int($0) * 3 + 3]) })
  }

  @Test func interlacedRowsLandInTheirPlace() throws {
    // Row y is filled with colour index y % 4, over 11 rows (all four passes used).
    let indices = (0..<11).flatMap { y in [UInt8](repeating: UInt8(y % 4), count: 2) }
    let gif = GIFWriter.gif(
      screen: (2, 11), frame: (0, 0, 2, 11), indices: indices, palette: Self.palette, interlaced: true)
    let buffer = try GIFCodec.decode(gif)
    for y in 0..<11 {
      let colour = Int(y % 4) * 3
      #expect(Fixtures.pixel(buffer, 1, y) == Self.palette[colour..<colour + 3].map(Int.init), "row \(y)")
    }
  }

  @Test func transparentIndexAndPartialFrameGiveRGBA() throws {
    let gif = GIFWriter.gif(
      screen: (4, 3), frame: (1, 1, 2, 2), indices: [0, 3, 3, 1], palette: Self.palette, transparentIndex: 3)
    let buffer = try GIFCodec.decode(gif)
    #expect(buffer.layout == .rgba && buffer.width == 4 && buffer.height == 3)
    #expect(Fixtures.pixel(buffer, 0, 0) == [0, 0, 0, 0])  // outside the frame
    #expect(Fixtures.pixel(buffer, 1, 1) == [255, 0, 0, 255])
    #expect(Fixtures.pixel(buffer, 2, 1) == [0, 0, 0, 0])  // transparent index
    #expect(Fixtures.pixel(buffer, 2, 2) == [0, 255, 0, 255])
  }

  @Test func frameOutsideTheScreenIsRefused() throws {
    let gif = GIFWriter.gif(
      screen: (4, 4), frame: (3, 0, 2, 1), indices: [0, 0], palette: Self.palette)
    let error = try #require(throws: CodecError.self) { try GIFCodec.decode(gif) }
    #expect(error.kind == .corrupt)
  }

  @Test func hugeScreenIsRefusedBeforeAllocating() throws {
    let gif = GIFWriter.gif(
      screen: (60_000, 60_000), frame: (0, 0, 1, 1), indices: [0], palette: Self.palette)
    let error = try #require(throws: CodecError.self) { try GIFCodec.decode(gif) }
    #expect(error.kind == .tooLarge)
    let info = try GIFCodec.readHeader(gif)
    #expect(info.width == 60_000 && info.height == 60_000)
  }
}

@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct GIFCorpusTests {
  @Test func animatedGIFGivesItsFirstFrame() throws {
    let buffer = try GIFCodec.decode(Fixtures.corpus("gif-animated.gif"))
    #expect(buffer.width == 80 && buffer.height == 80)
  }

  @Test func thousandFramesAreNotWalked() throws {
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
      let buffer = try GIFCodec.decode(Fixtures.corpus("gif-1024-frames-1x1.gif"))
      #expect(buffer.width == 1 && buffer.height == 1)
    }
    #expect(elapsed < .milliseconds(100))
  }

  @Test func frameExtentBombIsRefused() throws {
    // Its frame descriptor is followed by an invalid LZW code size (0x8F), on which giflib stops
    // inside DGifGetImageDesc (reported as a read failure) before our extent check can run; the
    // extent check itself is covered by frameOutsideTheScreenIsRefused.
    let error = try #require(throws: CodecError.self) {
      try GIFCodec.decode(Fixtures.corpus("gif-bomb-frame-extents.gif"))
    }
    #expect(error.kind == .corrupt || error.kind == .truncated)
  }

  @Test func truncatedGIFFails() throws {
    let error = try #require(throws: CodecError.self) {
      try GIFCodec.decode(Fixtures.corpus("gif-truncated.gif"))
    }
    #expect(error.kind == .truncated)
    #expect(throws: CodecError.self) { try GIFCodec.decode(Fixtures.corpus("png-rgba16.png")) }
  }
}
