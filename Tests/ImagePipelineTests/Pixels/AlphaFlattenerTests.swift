import ImageCodecs
import Testing

@testable import ImagePipeline

@Suite struct AlphaFlattenerTests {
  @Test func everyStraightColourAndAlphaIsCompositedOverWhiteWithCorrectRounding() {
    // All 65 536 (colour, alpha) pairs in one 256 × 256 image: colour = x, alpha = y.
    var bytes = [UInt8](repeating: 0, count: 256 * 256 * 4)
    for a in 0..<256 {
      for c in 0..<256 {
        let p = (a * 256 + c) * 4
        bytes[p] = UInt8(c)
        bytes[p + 1] = UInt8(255 - c)
        bytes[p + 2] = UInt8(c)
        bytes[p + 3] = UInt8(a)
      }
    }
    let result = AlphaFlattener.flattenOntoWhite(
      PixelBuffer(width: 256, height: 256, layout: .rgba, bytes: bytes))
    #expect(result.layout == .rgb && result.width == 256 && result.height == 256)
    var wrong = 0
    for a in 0..<256 {
      for c in 0..<256 {
        let expected = (Double(c * a + 255 * (255 - a)) / 255).rounded()
        let expectedG = (Double((255 - c) * a + 255 * (255 - a)) / 255).rounded()
        let p = (a * 256 + c) * 3
        if Double(result.bytes[p]) != expected || Double(result.bytes[p + 1]) != expectedG { wrong += 1 }
      }
    }
    #expect(wrong == 0)
  }

  @Test func everyPremultipliedColourAndAlphaIsCompositedOverWhiteExactly() {
    var bytes = [UInt8](repeating: 0, count: 256 * 256 * 4)
    for a in 0..<256 {
      for c in 0..<256 {
        let p = (a * 256 + c) * 4
        bytes[p] = UInt8(min(c, a))
        bytes[p + 1] = UInt8(c)  // may exceed alpha (invalid input): clamped to alpha
        bytes[p + 3] = UInt8(a)
      }
    }
    let result = AlphaFlattener.flattenOntoWhite(
      PixelBuffer(width: 256, height: 256, layout: .rgba, bytes: bytes, premultiplied: true))
    var wrong = 0
    for a in 0..<256 {
      for c in 0..<256 {
        let p = (a * 256 + c) * 3
        if Int(result.bytes[p]) != min(c, a) + 255 - a || Int(result.bytes[p + 1]) != min(c, a) + 255 - a
          || Int(result.bytes[p + 2]) != 255 - a
        {
          wrong += 1
        }
      }
    }
    #expect(wrong == 0)
  }

  @Test(arguments: [false, true])
  func transparentBlackBackgroundBecomesWhiteAndOpaqueBlackInkStaysBlack(premultiplied: Bool) {
    // The trap of png-rgba8-transparent-ink.png: every pixel stores black RGB; only alpha says
    // which ones are ink. Dropping alpha would give an all-black image.
    let (width, height) = (6, 4)
    var bytes = [UInt8](repeating: 0, count: width * height * 4)
    for y in 0..<height { for x in 0..<width where x == y { bytes[(y * width + x) * 4 + 3] = 255 } }
    let result = AlphaFlattener.flattenOntoWhite(
      PixelBuffer(width: width, height: height, layout: .rgba, bytes: bytes, premultiplied: premultiplied))
    for y in 0..<height {
      for x in 0..<width {
        #expect(PixelFixtures.pixel(result, x, y) == (x == y ? [0, 0, 0] : [255, 255, 255]))
      }
    }
  }

  @Test func paddedRowsAreReadAtTheirStrideAndOutputIsTight() {
    let source = PixelBuffer(
      width: 2, height: 2, layout: .rgba, rowBytes: 11,
      bytes: [10, 20, 30, 255, 0, 0, 0, 0, 9, 9, 9, 40, 50, 60, 255, 0, 0, 0, 255, 7, 7, 7])
    let result = AlphaFlattener.flattenOntoWhite(source)
    #expect(result.rowBytes == 6)
    #expect(result.bytes == [10, 20, 30, 255, 255, 255, 40, 50, 60, 0, 0, 0])
  }

  @Test(arguments: [PixelBuffer.Layout.gray, .rgb])
  func imagesWithoutAlphaPassThroughUnchanged(layout: PixelBuffer.Layout) {
    let source = PixelFixtures.noise(width: 7, height: 3, layout: layout, padding: 1)
    let result = AlphaFlattener.flattenOntoWhite(source)
    #expect(result.bytes == source.bytes && result.layout == layout)
  }

  @Test func premultiplyingRoundsAndMarksTheBuffer() {
    let source = PixelBuffer(width: 2, height: 1, layout: .rgba, bytes: [255, 128, 1, 128, 200, 100, 50, 0])
    let result = AlphaFlattener.premultiplied(source)
    #expect(result.premultiplied)
    #expect(result.bytes == [128, 64, 1, 128, 0, 0, 0, 0])
  }
}
