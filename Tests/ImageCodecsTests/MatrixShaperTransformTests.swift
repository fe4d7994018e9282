import Foundation
import TestSupport
import Testing

@testable import ImageCodecs

/// The fixed-point matrix-shaper path against lcms's own 8-bit transform of the same profiles.
@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct MatrixShaperTransformTests {
  /// Worst and mean absolute difference per channel between two buffers of the same shape.
  struct Difference {
    var max = 0
    var mean = 0.0
  }

  /// Every value of a 17×17×17 grid spanning 0…255 (0, 16, 32 … 239, 255).
  static func grid(layout: PixelBuffer.Layout = .rgb) -> PixelBuffer {
    let steps = (0..<17).map { UInt8(($0 * 255 + 8) / 16) }
    var bytes: [UInt8] = []
    for r in steps {
      for g in steps {
        for b in steps { bytes += layout == .rgba ? [r, g, b, r ^ g ^ b] : [r, g, b] }
      }
    }
    return PixelBuffer(width: 17, height: 17 * 17, layout: layout, bytes: bytes)
  }

  /// Deterministic pseudo-random pixels (xorshift64), `rowBytes` padded by `padding` bytes.
  static func random(width: Int, height: Int, layout: PixelBuffer.Layout = .rgb, padding: Int = 0)
    -> PixelBuffer
  {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    let rowBytes = width * layout.channels + padding
    let bytes = (0..<rowBytes * height).map { _ in
      state ^= state << 13
      state ^= state >> 7
      state ^= state << 17
      return UInt8(truncatingIfNeeded: state >> 24)
    }
    return PixelBuffer(width: width, height: height, layout: layout, rowBytes: rowBytes, bytes: bytes)
  }

  static func difference(_ a: PixelBuffer, _ b: PixelBuffer) -> Difference {
    var result = Difference()
    var total = 0
    for (x, y) in zip(a.bytes, b.bytes) {
      let d = abs(Int(x) - Int(y))
      result.max = max(result.max, d)
      total += d
    }
    result.mean = Double(total) / Double(max(a.bytes.count, 1))
    return result
  }

  /// The fast path's and lcms's output for `input`, through `transform`.
  static func compare(_ transform: LCMSTransform, _ input: PixelBuffer) -> Difference {
    var fast = input
    var lcms = input
    transform.apply(&fast)
    transform.applyWithLCMS(&lcms)
    return difference(fast, lcms)
  }

  /// Checks the grid and 300 000 random pixels; returns the random pixels' difference.
  @discardableResult
  static func expectCloseToLCMS(_ transform: LCMSTransform, _ label: String) throws -> Difference {
    #expect(transform.fastPath != nil, "\(label): no fast path")
    let grid = compare(transform, grid())
    let random = compare(transform, random(width: 600, height: 500))
    print("\(label): grid max \(grid.max) mean \(grid.mean); random max \(random.max) mean \(random.mean)")
    #expect(grid.max <= 1, "\(label) grid")
    #expect(random.max <= 1, "\(label) random")
    #expect(grid.mean < 0.05 && random.mean < 0.05, "\(label) means \(grid.mean) \(random.mean)")
    return random
  }

  static func transform(
    _ profile: LCMSProfile, layout: PixelBuffer.Layout = .rgb, intent: ColourTransform.Intent = .perceptual
  ) throws -> LCMSTransform {
    let key = TransformKey(profile: [], layout: layout, intent: intent, inverted: false)
    return try #require(LCMSTransform(from: profile, key: key))
  }

  /// The embedded ICC profile of a corpus file.
  static func iccProfile(_ name: String) throws -> [UInt8] {
    let data = try Fixtures.corpus(name)
    let profile: [UInt8]? =
      switch name.split(separator: ".").last {
      case "jpg": JPEGCodec.iccProfile(data)
      case "png": try PNGCodec.iccProfile(data)
      case "webp": try WebPCodec.metadata(data).iccProfile
      default: try HEIFCodec.primaryInfo(data).colour.iccProfile
      }
    return try #require(profile, "\(name) has no ICC profile")
  }

  @Test(arguments: [
    "heic-iphonexs-irot-exif6-gps.heic", "avif-iphone-gps-p3.avif", "png-icc-display-p3.png",
    "jpeg-icc-p3-d65.jpg",
    "jpeg-icc-adobe-rgb-1998.jpg", "jpeg-icc-rgb-to-gbr-swap.jpg", "jpeg-pixel6-ultrahdr-gps-truncated.jpg",
    "avif-10bit-icc.avif", "heic-iphone13pro-grid-depth-gps.heic", "heic-samsung-200mp-irot.heic",
    "webp-lossy-icc-exif-xmp.webp", "jpeg-12bit-precision.jpg",
  ])
  func corpusProfilesMatchLCMSWithinOneLevel(_ name: String) throws {
    let profile = try #require(LCMSProfile(try Self.iccProfile(name)))
    try Self.expectCloseToLCMS(try Self.transform(profile), name)
  }

  @Test func displayP3MatchesLCMSForBothIntents() throws {
    let profile = try #require(LCMSProfile(try Self.iccProfile("heic-iphonexs-irot-exif6-gps.heic")))
    for intent in [ColourTransform.Intent.perceptual, .relativeColorimetric] {
      try Self.expectCloseToLCMS(try Self.transform(profile, intent: intent), "Display P3 \(intent)")
    }
  }

  /// A sandbox child starts with an empty cache: a transform that has the shortcut must not pay
  /// for lcms's own (3–10 ms for Display P3) until something asks for it.
  @Test func lcmsIsBuiltOnlyWhenAsked() throws {
    let profile = try #require(LCMSProfile(try Self.iccProfile("heic-iphonexs-irot-exif6-gps.heic")))
    let transform = try Self.transform(profile)
    var pixels = Self.random(width: 64, height: 8)
    transform.apply(&pixels)
    #expect(transform.fastPath != nil && !transform.lcmsIsBuilt)
    transform.applyWithLCMS(&pixels)
    #expect(transform.lcmsIsBuilt)
  }

  @Test func adobeRGBBuiltFromPrimariesMatchesLCMS() throws {
    // Adobe RGB (1998): its primaries, D65, gamma 563/256 (what its ICC profile's curv holds).
    let profile = try #require(
      LCMSProfile.rgb(
        primaries: [0.64, 0.33, 0.21, 0.71, 0.15, 0.06], white: (0.3127, 0.3290), curveType: 1,
        curveParameters: [563 / 256]))
    try Self.expectCloseToLCMS(try Self.transform(profile), "Adobe RGB (built)")
  }

  @Test(arguments: [(9, 1), (9, 14), (9, 8), (11, 13), (12, 13), (12, 1), (1, 4), (5, 5), (6, 1)])
  func nclxTransformsMatchLCMSWithinOneLevel(primaries: Int, transfer: Int) throws {
    let nclx = NCLXColour(
      colourPrimaries: primaries, transferCharacteristics: transfer, matrixCoefficients: 1, fullRange: true)
    let transform = try ColourTransform.transform(nclx: nclx, layout: .rgb).get()
    try Self.expectCloseToLCMS(transform, "nclx \(primaries)/\(transfer)")
  }

  @Test func sRGBSourceKeepsEveryValue() throws {
    let transform = try Self.transform(try #require(LCMSProfile.sRGB()))
    #expect(transform.fastPath != nil)
    let input = Self.grid()
    var output = input
    transform.apply(&output)
    let change = Self.difference(input, output)
    #expect(change.max <= 1 && change.mean < 0.01, "max \(change.max) mean \(change.mean)")
  }

  @Test func rgbaKeepsAlphaAndRowPaddingAndMatchesRGB() throws {
    let profile = try #require(LCMSProfile(try Self.iccProfile("heic-iphonexs-irot-exif6-gps.heic")))
    let rgba = try Self.transform(profile, layout: .rgba)
    let input = Self.random(width: 301, height: 97, layout: .rgba, padding: 7)
    var output = input
    rgba.apply(&output)
    #expect(Self.compare(rgba, input).max <= 1)

    // Every alpha and padding byte is as it was; colour equals the RGB path's on the same pixels.
    var rgbInput = PixelBuffer(width: 301, height: 97, layout: .rgb)
    for y in 0..<97 {
      for x in 0..<301 {
        let at = y * input.rowBytes + x * 4
        #expect(output.bytes[at + 3] == input.bytes[at + 3])
        for c in 0..<3 { rgbInput.bytes[(y * 301 + x) * 3 + c] = input.bytes[at + c] }
      }
      let padding = (y * input.rowBytes + 301 * 4)..<((y + 1) * input.rowBytes)
      #expect(output.bytes[padding] == input.bytes[padding])
    }
    var rgbOutput = rgbInput
    try Self.transform(profile).apply(&rgbOutput)
    let sameColour = (0..<97 * 301).allSatisfy { i in
      let at = (i / 301) * input.rowBytes + (i % 301) * 4
      return (0..<3).allSatisfy { output.bytes[at + $0] == rgbOutput.bytes[i * 3 + $0] }
    }
    #expect(sameColour)
  }

  @Test func paddedRGBRowsKeepTheirPadding() throws {
    let profile = try #require(LCMSProfile(try Self.iccProfile("jpeg-icc-adobe-rgb-1998.jpg")))
    let input = Self.random(width: 33, height: 20, padding: 5)
    var output = input
    try Self.transform(profile).apply(&output)
    for y in 0..<20 {
      let padding = (y * input.rowBytes + 99)..<((y + 1) * input.rowBytes)
      #expect(output.bytes[padding] == input.bytes[padding])
    }
    #expect(output.bytes != input.bytes)
  }

  @Test func grayAndCMYKProfilesStayOnLCMS() throws {
    let gray = try #require(LCMSProfile(try Self.iccProfile("jpeg-grayscale-gray-icc.jpg")))
    #expect(try Self.transform(gray, layout: .gray).fastPath == nil)
    let cmyk = try #require(LCMSProfile(try Self.iccProfile("jpeg-cmyk-swop-icc.jpg")))
    let key = TransformKey.cmyk(profile: [], inverted: false)
    #expect(try #require(LCMSTransform(from: cmyk, key: key)).fastPath == nil)
    #expect(MatrixShaperTransform(source: cmyk, target: try #require(LCMSProfile.sRGB())) == nil)
  }

  /// The tag `signature`'s data in an ICC profile.
  static func tag(_ signature: String, in profile: [UInt8]) -> [UInt8]? {
    func u32(_ at: Int) -> Int { profile[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
    for entry in 0..<u32(128) {
      let at = 132 + entry * 12
      if profile[at..<at + 4].elementsEqual(signature.utf8) {
        return Array(profile[u32(at + 4)..<u32(at + 4) + u32(at + 8)])
      }
    }
    return nil
  }

  /// `profile` with one more tag appended (the tag table grows by one entry, data moves by 12).
  static func adding(_ signature: String, _ data: [UInt8], to profile: [UInt8]) -> [UInt8] {
    func be(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
    func u32(_ at: Int) -> Int { profile[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
    let count = u32(128)
    var entries: [UInt8] = []
    for entry in 0..<count {
      let at = 132 + entry * 12
      entries += profile[at..<at + 4] + be(u32(at + 4) + 12) + be(u32(at + 8))
    }
    var body = Array(profile[(132 + count * 12)...])
    body += [UInt8](repeating: 0, count: (4 - (profile.count + 12) % 4) % 4)
    entries += Array(signature.utf8) + be(132 + (count + 1) * 12 + body.count) + be(data.count)
    let total = 132 + (count + 1) * 12 + body.count + data.count
    return be(total) + profile[4..<128] + be(count + 1) + entries + body + data
  }

  @Test func matrixShaperWithALUTTagStaysOnLCMS() throws {
    // lcms uses an AToB0 LUT over the matrix and curves when a profile has both; so must we.
    let p3 = try Self.iccProfile("heic-iphonexs-irot-exif6-gps.heic")
    let lutProfile = try Self.iccProfile("jpeg-progressive-multichunk-icc.jpg")
    let lut = try #require(Self.tag("A2B0", in: lutProfile))
    let both = try #require(LCMSProfile(Self.adding("A2B0", lut, to: p3)))
    let plain = try #require(LCMSProfile(Self.adding("zzzz", [0, 0, 0, 0], to: p3)))
    #expect(try Self.transform(plain).fastPath != nil)
    #expect(try Self.transform(both).fastPath == nil)
    #expect(try Self.transform(try #require(LCMSProfile(lutProfile))).fastPath == nil)
  }

  @Test func publicConversionUsesTheFastPathForDisplayP3() throws {
    let icc = try Self.iccProfile("heic-iphonexs-irot-exif6-gps.heic")
    let key = TransformKey(profile: icc, layout: .rgb, intent: .perceptual, inverted: false)
    let transform = try ColourTransform.cachedTransform(key, build: { LCMSProfile(icc) }).get()
    #expect(transform.fastPath != nil)
    let input = Self.random(width: 64, height: 64)
    var viaPublic = input
    var viaFast = input
    #expect(ColourTransform.toSRGB(&viaPublic, iccProfile: icc) == .converted)
    try #require(transform.fastPath).apply(&viaFast)
    #expect(viaPublic.bytes == viaFast.bytes)
  }
}

extension MatrixShaperTransformTests {
  /// The output table filled by bisection is entry for entry the table evaluated at every
  /// index, for sRGB's own encoding curve over a range with out-of-gamut ends.
  @Test func anOutputTableFilledByBisectionEqualsOneEvaluatedEverywhere() {
    func level(_ index: Int32) -> UInt8 {
      let light = Double(min(max(index, 0), 1 << 16)) / Double(1 << 16)
      let encoded = light <= 0.003_130_8 ? 12.92 * light : 1.055 * pow(light, 1 / 2.4) - 0.055
      return UInt8((min(max(encoded, 0), 1) * 255).rounded())
    }
    for range: ClosedRange<Int32> in [-9_000...80_000, 0...65_536, 5...6, 7...7] {
      #expect(MatrixShaperTransform.monotoneTable(range, level: level) == range.map(level), "\(range)")
    }
  }
}
