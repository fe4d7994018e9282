import Foundation
import ImageCodecs
import ImageContainers
import Testing

@testable import ImagePipeline

@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct ColourTests {
  /// The channel (0 R, 1 G, 2 B) that dominates the pixel at (x, y).
  static func dominant(_ image: PixelBuffer, _ x: Int, _ y: Int) -> Int {
    let o = y * image.rowBytes + x * 3
    let rgb = [image.bytes[o], image.bytes[o + 1], image.bytes[o + 2]]
    return rgb.indices.max { rgb[$0] < rgb[$1] }!
  }

  @Test func rgbToGBRCanaryShowsTheColoursItsLabelsName() throws {
    let input = try corpusBytes("jpeg-icc-rgb-to-gbr-swap.jpg")
    let result = try Pipeline().process(input)
    let out = try JPEGCodec.decode(result.jpeg)
    let raw = try JPEGCodec.decode(input)
    // Stored pixels: blue behind "RED" (top), red behind "GREEN" (lower left), green behind "BLUE"
    // (right). Through the profile each background must match its label.
    #expect(
      Self.dominant(raw, 500, 50) == 2 && Self.dominant(raw, 100, 650) == 0
        && Self.dominant(raw, 900, 800) == 1)
    #expect(Self.dominant(out, 500, 50) == 0, "RED label background")
    #expect(Self.dominant(out, 100, 650) == 1, "GREEN label background")
    #expect(Self.dominant(out, 900, 800) == 2, "BLUE label background")
    #expect(result.source.colourProfile == "RGB-to-GBR")
  }

  @Test(arguments: ["jpeg-icc-p3-d65.jpg", "jpeg-icc-adobe-rgb-1998.jpg"])
  func wideGamutProfilesAreConvertedToSRGB(_ file: String) throws {
    let input = try corpusBytes(file)
    let result = try Pipeline().process(input)
    #expect(!result.losslessTransform)
    let out = try JPEGCodec.decode(result.jpeg)
    var raw = try JPEGCodec.decode(input)
    if (raw.width, raw.height) != (out.width, out.height) {
      raw = Resampler.resize(raw, width: out.width, height: out.height)
    }
    // Converting a wide gamut into sRGB moves colours measurably; a dropped profile would not.
    // The output must sit nearer the lcms conversion of the input than the input itself.
    let moved = Fixtures.meanDifference(out, raw)
    var converted = raw
    _ = ColourTransform.toSRGB(
      &converted, iccProfile: try #require(try JPEGMarkerWalker.read(input).iccProfile))
    let residual = Fixtures.meanDifference(out, converted)
    #expect(residual < 3 && moved > residual, "moved \(moved), residual \(residual)")
  }

  @Test func untaggedInputKeepsItsColours() throws {
    let image = Fixtures.quadrants(width: 120, height: 80)
    let result = try Pipeline().process(Fixtures.png(image))
    #expect(result.source.colourProfile == nil)
    let out = try JPEGCodec.decode(result.jpeg)
    #expect(Fixtures.meanDifference(out, image) < 3)
  }

  @Test func displayP3PNGIsConvertedAndNamed() throws {
    let result = try Pipeline().process(try corpusBytes("png-icc-display-p3.png"))
    #expect(result.source.colourProfile?.contains("P3") == true)
  }

  @Test func transparentInkPNGIsFlattenedOntoWhite() throws {
    let result = try Pipeline().process(try corpusBytes("png-rgba8-transparent-ink.png"))
    let out = try JPEGCodec.decode(result.jpeg)
    // Mostly white paper with dark ink: the mean is bright, not black.
    let mean = Double(out.bytes.reduce(0) { $0 + Int($1) }) / Double(out.bytes.count)
    #expect(mean > 200)
  }
}
