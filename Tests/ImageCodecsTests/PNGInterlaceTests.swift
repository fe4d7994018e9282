import ImageCodecs
import TestSupport
import Testing

/// Adam7-interlaced 16-bit PNGs (Tests/Fixtures/decoders, Scripts/make-decoder-fixtures) decode
/// like their non-interlaced twins, which hold the same samples: libpng's simplified reader
/// scrambled their rows when reducing them to 8 bits (18–27 dB).
@Suite struct PNGInterlaceTests {
  @Test(arguments: ["grey", "greyalpha", "rgb", "rgba"])
  func sixteenBitAdam7MatchesItsPlainTwin(_ kind: String) throws {
    let interlaced = try PNGCodec.decode(DecoderFixtures.bytes("png16-\(kind)-adam7.png"))
    let plain = try PNGCodec.decode(DecoderFixtures.bytes("png16-\(kind).png"))
    #expect(try PNGCodec.readHeader(DecoderFixtures.bytes("png16-\(kind)-adam7.png")).interlaced)
    #expect(
      (interlaced.width, interlaced.height, interlaced.layout) == (plain.width, plain.height, plain.layout))
    let psnr = Fixtures.psnr(Self.premultiplied(interlaced), Self.premultiplied(plain))
    #expect(psnr >= 30, "\(kind): \(psnr) dB")
  }

  @Test func sixteenBitAdam7KeepsSixteenBitPrecisionOnTheWayToEight() throws {
    // The grey fixture's first sample is 0 and the picture rises to the right: every decoded
    // sample within one 8-bit step of its twin's, not merely close on average.
    let interlaced = try PNGCodec.decode(DecoderFixtures.bytes("png16-grey-adam7.png"))
    let plain = try PNGCodec.decode(DecoderFixtures.bytes("png16-grey.png"))
    let worst = zip(interlaced.bytes, plain.bytes).map { abs(Int($0) - Int($1)) }.max() ?? 0
    #expect(worst <= 1)
  }

  /// RGBA with colour premultiplied by alpha, rounded (how the interlaced decode returns it).
  static func premultiplied(_ image: PixelBuffer) -> PixelBuffer {
    guard image.layout == .rgba, !image.premultiplied else { return image }
    var out = image
    for i in stride(from: 0, to: out.bytes.count, by: 4) {
      let a = Int(out.bytes[i + 3])
      for c in 0..<3 { out.bytes[i + c] = UInt8((Int(out.bytes[i + c]) * a + 127) / 255) }
    }
    out.premultiplied = true
    return out
  }
}
