import TestSupport
import Testing

@testable import ImageCodecs

/// libheif 1.15 and monochrome images (Tests/Fixtures/decoders, Scripts/make-decoder-fixtures):
/// decoded as monochrome, the plane is brought to full range by its nclx range.
@Suite struct HEIFMonochromeTests {
  static func reference() throws -> PixelBuffer {
    try PNGCodec.decode(DecoderFixtures.bytes("mono-reference.png"))
  }

  @Test(arguments: [
    "mono8-limited.avif", "mono10-limited.avif", "mono12-limited.avif", "mono8-full.avif",
    "mono8-limited.heic", "mono10-limited.heic", "mono12-limited.heic",
  ])
  func monochromeDecodesToFullRangeGray(_ name: String) throws {
    let image = try HEIFCodec.decode(DecoderFixtures.bytes(name), options: .init(monochrome: true))
    #expect(image.pixels.layout == .gray && (image.pixels.width, image.pixels.height) == (96, 64))
    let psnr = Fixtures.psnr(image.pixels, try Self.reference())
    #expect(psnr >= 30, "\(name): \(psnr) dB")
  }

  @Test func libheifAloneLeavesALimitedRangePlaneAsItIs() throws {
    // What the option works around: asked for RGB, libheif 1.15 copies Y into R, G and B.
    let image = try HEIFCodec.decode(DecoderFixtures.bytes("mono8-limited.avif"))
    let red = PixelBuffer(
      width: 96, height: 64, layout: .gray,
      bytes: stride(from: 0, to: image.pixels.bytes.count, by: 3).map {
        image.pixels.bytes[$0]
      })
    #expect(red.bytes.min()! >= 14 && red.bytes.max()! <= 237)
    #expect(Fixtures.psnr(red, try Self.reference()) < 30)
  }

  @Test func videoRangeTableSpansTheFullRangeAtEveryDepth() {
    for depth in [8, 10, 12] {
      let table = HEIFDecodedImage.fullRangeTable(depth: depth, videoRange: true)
      let scale = 1 << (depth - 8)
      #expect(table.count == 1 << depth)
      #expect(table[0] == 0 && table[16 * scale] == 0 && table[235 * scale] == 255 && table.last == 255)
      #expect(table[(16 + 219 / 2) * scale] == 127 || table[(16 + 219 / 2) * scale] == 128)
      let full = HEIFDecodedImage.fullRangeTable(depth: depth, videoRange: false)
      #expect(full[0] == 0 && full.last == 255 && full[full.count / 2] == 128)
    }
  }
}
