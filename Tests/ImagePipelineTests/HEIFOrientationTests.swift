import ImageCodecs
import Testing

@testable import ImagePipeline

/// HEIF irot/imir with and without the `miaf` brand, on corpus files whose brands are patched in
/// place (same size; only a four-character code changes).
@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct HEIFOrientationTests {
  static func header(_ bytes: [UInt8]) throws -> ImageHeader {
    try ImageHeader.read(bytes, format: FormatSniffer.sniff(bytes))
  }

  /// Replaces the compatible brand at index `index` of the ftyp box.
  static func settingBrand(_ bytes: [UInt8], index: Int, to brand: String) -> [UInt8] {
    var out = bytes
    out.replaceSubrange((16 + 4 * index)..<(20 + 4 * index), with: Array(brand.utf8))
    return out
  }

  @Test func policyForTheThreePhoneFiles() throws {
    let xs = OrientationPolicy.decide(
      for: try Self.header(try corpusBytes("heic-iphonexs-irot-exif6-gps.heic")))
    #expect(
      xs.source == .heifTransforms && xs.apply == .up && !xs.ignoreHEIFTransformations
        && xs.reported == .right)
    let seven = OrientationPolicy.decide(
      for: try Self.header(try corpusBytes("heic-iphone7plus-exif6-no-irot.heic")))
    #expect(seven.source == .exif && seven.apply == .right && seven.ignoreHEIFTransformations)
    let nokia = OrientationPolicy.decide(
      for: try Self.header(try corpusBytes("heic-nokia83-irot-exif1-gps.heif")))
    #expect(nokia.source == .exif && nokia.apply == .up && nokia.ignoreHEIFTransformations)
  }

  @Test func noMIAFFileWithoutEXIFFollowsIrot() throws {
    let avif = OrientationPolicy.decide(for: try Self.header(try corpusBytes("avif-irot-90cw.avif")))
    #expect(avif.source == .heifTransforms && avif.apply == .up)
  }

  @Test func iPhoneXSWithoutMIAFBrandTakesEXIFAndLooksTheSame() throws {
    let original = try corpusBytes("heic-iphonexs-irot-exif6-gps.heic")
    // Compatible brands: mif1, miaf, MiHB, heic → miaf becomes an unknown brand.
    let patched = Self.settingBrand(original, index: 1, to: "xxxx")
    #expect(try !HEIFBoxReader.read(patched).hasMIAFBrand)
    let pipeline = try Pipeline()
    let viaIrot = try pipeline.process(original)
    let viaEXIF = try pipeline.process(patched)
    #expect(viaIrot.source.orientationSource == .heifTransforms && viaEXIF.source.orientationSource == .exif)
    #expect(
      (viaIrot.width, viaIrot.height) == (1536, 2048) && (viaEXIF.width, viaEXIF.height) == (1536, 2048))
    let a = try JPEGCodec.decode(viaIrot.jpeg)
    let b = try JPEGCodec.decode(viaEXIF.jpeg)
    #expect(Fixtures.meanDifference(a, b) < 3)
  }

  @Test func nokiaWithMIAFBrandFollowsItsIrot() throws {
    let original = try corpusBytes("heic-nokia83-irot-exif1-gps.heif")
    // Compatible brands: mif1, heic → heic becomes miaf: now irot (90° CW) rules.
    let patched = Self.settingBrand(original, index: 1, to: "miaf")
    let pipeline = try Pipeline()
    let upright = try pipeline.process(original)
    let rotated = try pipeline.process(patched)
    #expect((upright.width, upright.height) == (2048, 1536))
    #expect(
      (rotated.width, rotated.height) == (1536, 2048) && rotated.source.orientationSource == .heifTransforms)
    let expected = Orienter.apply(.right, to: try JPEGCodec.decode(upright.jpeg))
    #expect(Fixtures.meanDifference(try JPEGCodec.decode(rotated.jpeg), expected) < 4)
  }

  @Test func mirrorAndRotationOfAVIFAreAppliedOnce() throws {
    let result = try Pipeline().process(try corpusBytes("avif-irot-imir-clap.avif"))
    #expect((result.width, result.height) == (385, 330))
    #expect(result.source.orientationSource == .heifTransforms)
  }
}
