import ImageCodecs
import TestSupport
import Testing

@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct ColourTransformTests {
  /// The Display P3 profile an iPhone writes (548 bytes, from a corpus HEIC).
  static func displayP3() throws -> [UInt8] {
    let info = try HEIFCodec.primaryInfo(Fixtures.corpus("heic-iphonexs-irot-exif6-gps.heic"))
    return try #require(info.colour.iccProfile)
  }

  static func swatches() -> PixelBuffer {
    PixelBuffer(width: 3, height: 1, layout: .rgb, bytes: [200, 100, 50, 100, 180, 120, 128, 128, 128])
  }

  @Test func rgbToGbrCanaryShowsTheColoursItsLabelsName() throws {
    let data = try Fixtures.corpus("jpeg-icc-rgb-to-gbr-swap.jpg")
    var buffer = try JPEGCodec.decode(data)
    let profile = try #require(JPEGCodec.iccProfile(data))
    // Untransformed, the 12 o'clock area (labelled RED) is blue.
    let before = Fixtures.mean(buffer, x: 480..<520, y: 40..<80)
    #expect(before[2] > 200 && before[0] < 60)
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: profile) == .converted)
    let top = Fixtures.mean(buffer, x: 480..<520, y: 40..<80)  // "RED"
    let lowerRight = Fixtures.mean(buffer, x: 840..<880, y: 800..<840)  // "BLUE"
    let lowerLeft = Fixtures.mean(buffer, x: 120..<160, y: 800..<840)  // "GREEN"
    #expect(top[0] > 200 && top[1] < 80 && top[2] < 80, "\(top)")
    #expect(lowerRight[2] > 200 && lowerRight[0] < 80, "\(lowerRight)")
    #expect(lowerLeft[1] > 200 && lowerLeft[1] > lowerLeft[0] + 100 && lowerLeft[1] > lowerLeft[2] + 100)
  }

  @Test func displayP3ConvertsToTheComputedSRGBValues() throws {
    var buffer = Self.swatches()
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: try Self.displayP3()) == .converted)
    // Expected from the P3-D65 and sRGB primaries matrices and the sRGB curve (computed offline).
    let expected: [Double] = [214.9, 92.6, 31.0, 65.4, 182.4, 113.9, 128, 128, 128]
    for (got, want) in zip(buffer.bytes, expected) {
      #expect(abs(Double(got) - want) <= 2.5, "\(buffer.bytes)")
    }
  }

  @Test func adobeRGBConvertsToTheComputedSRGBValues() throws {
    let data = try Fixtures.corpus("jpeg-icc-adobe-rgb-1998.jpg")
    let profile = try #require(JPEGCodec.iccProfile(data))
    #expect(ColourTransform.describe(iccProfile: profile)?.description == "Adobe RGB (1998)")
    var buffer = Self.swatches()
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: profile) == .converted)
    // Adobe RGB primaries, gamma 563/256, to sRGB (computed offline); the second swatch's red is
    // outside sRGB and clips to 0.
    let expected: [Double] = [227.1, 100.1, 42.4, 0, 181.5, 117.3, 129, 129, 129]
    for (got, want) in zip(buffer.bytes, expected) {
      #expect(abs(Double(got) - want) <= 2.5, "\(buffer.bytes)")
    }
  }

  @Test func nclxDisplayP3MatchesTheICCProfile() throws {
    var viaICC = Self.swatches()
    ColourTransform.toSRGB(&viaICC, iccProfile: try Self.displayP3())
    var viaNCLX = Self.swatches()
    let p3 = NCLXColour(
      colourPrimaries: 12, transferCharacteristics: 13, matrixCoefficients: 1, fullRange: true)
    #expect(ColourTransform.toSRGB(&viaNCLX, nclx: p3) == .converted)
    for (a, b) in zip(viaICC.bytes, viaNCLX.bytes) { #expect(abs(Int(a) - Int(b)) <= 2) }
  }

  @Test func sRGBLikeNCLXLeavesPixelsAlone() {
    var buffer = Self.swatches()
    let srgb = NCLXColour(
      colourPrimaries: 1, transferCharacteristics: 13, matrixCoefficients: 6, fullRange: true)
    #expect(ColourTransform.toSRGB(&buffer, nclx: srgb) != .converted)
    #expect(buffer.bytes == Self.swatches().bytes)
    let pq = NCLXColour(
      colourPrimaries: 9, transferCharacteristics: 16, matrixCoefficients: 9, fullRange: false)
    #expect(ColourTransform.toSRGB(&buffer, nclx: pq) != .converted)
  }

  @Test func anSRGBProfileKeepsColours() throws {
    let profile = try #require(
      JPEGCodec.iccProfile(Fixtures.corpus("jpeg-pixel6-ultrahdr-gps-truncated.jpg")))
    #expect(ColourTransform.describe(iccProfile: profile)?.colourSpace == .rgb)
    var buffer = Fixtures.gradient(width: 64, height: 64)
    ColourTransform.toSRGB(&buffer, iccProfile: profile)
    let original = Fixtures.gradient(width: 64, height: 64)
    #expect(zip(buffer.bytes, original.bytes).allSatisfy { abs(Int($0) - Int($1)) <= 1 })
  }

  @Test func alphaIsCarriedThrough() throws {
    var buffer = PixelBuffer(
      width: 2, height: 1, layout: .rgba, bytes: [200, 100, 50, 7, 100, 180, 120, 250])
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: try Self.displayP3()) == .converted)
    #expect(buffer.bytes[3] == 7 && buffer.bytes[7] == 250)
    #expect(abs(Int(buffer.bytes[0]) - 215) <= 2)
  }

  @Test func grayProfileConvertsGrayPixels() throws {
    let data = try Fixtures.corpus("jpeg-grayscale-gray-icc.jpg")
    let profile = try #require(JPEGCodec.iccProfile(data))
    #expect(ColourTransform.describe(iccProfile: profile)?.colourSpace == .gray)
    var buffer = PixelBuffer(width: 3, height: 1, layout: .gray, bytes: [0, 128, 255])
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: profile) == .converted)
    // Gamma 2.2 → sRGB curve: ends fixed, mid-grey moves by about one level.
    #expect(buffer.bytes[0] <= 1 && buffer.bytes[2] >= 254 && abs(Int(buffer.bytes[1]) - 129) <= 1)
  }

  @Test func brokenOrMismatchedProfilesLeavePixelsUnchanged() throws {
    var buffer = Self.swatches()
    let garbage = [UInt8](repeating: 0x41, count: 500)
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: garbage) != .converted)
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: []) != .converted)
    let gray = try #require(JPEGCodec.iccProfile(Fixtures.corpus("jpeg-grayscale-gray-icc.jpg")))
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: gray) != .converted)
    let cmyk = try #require(JPEGCodec.iccProfile(Fixtures.corpus("jpeg-cmyk-swop-icc.jpg")))
    #expect(ColourTransform.toSRGB(&buffer, iccProfile: cmyk) != .converted)
    #expect(buffer.bytes == Self.swatches().bytes)
  }
}
