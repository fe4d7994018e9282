import Foundation
import ImageCodecs
import TestSupport
import Testing

/// Cut, damaged and made-up samples and configuration records: each either decodes to a
/// picture of a sane format or throws a CodecError; never a crash, a hang or a sanitizer report.
/// Variants per case: ATTACHD_ROBUSTNESS_VARIANTS (default 200).
@Suite(.timeLimit(.minutes(2)))
struct HEVCRobustnessTests {
  static let variants = Int(ProcessInfo.processInfo.environment["ATTACHD_ROBUSTNESS_VARIANTS"] ?? "") ?? 200

  /// A deterministic generator, so a failure can be replayed.
  struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  static func kind(_ body: () throws -> Void) -> CodecError.Kind? {
    do {
      try body()
      return nil
    } catch let error as CodecError {
      return error.kind
    } catch {
      Issue.record("not a CodecError: \(error)")
      return nil
    }
  }

  @Test(arguments: HEVCFixture.all)
  func everyCutOfASampleIsTruncated(fixture: HEVCFixture) throws {
    let picture = try fixture.picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    for length in 0..<picture.sample.count {
      let kind = Self.kind { _ = try decoder.decodePlanes(picture.sample[0..<length]) }
      #expect(kind == .truncated, "cut at \(length) of \(picture.sample.count)")
    }
    _ = try decoder.decodePlanes(picture.sample)
  }

  @Test func badFramingIsRefused() throws {
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    let sample = picture.sample
    let cases: [([UInt8], CodecError.Kind)] = [
      ([0, 0, 0, 0] + sample, .corrupt),  // an empty NAL unit
      ([0, 0, 0, 1, 0x40] + sample, .corrupt),  // a NAL unit shorter than its header
      (sample + [0, 0], .truncated),  // a length prefix cut off
      (sample + [0, 0, 0, 9, 0x4E, 0x01], .truncated),  // a NAL unit longer than what is left
      ([0, 0, 0, 2, 0xC0, 0x01] + sample, .corrupt),  // forbidden_zero_bit
      (HEVCSampleBytes.parameterSets(of: picture.hvcC), .corrupt),  // no slice at all
      (sample + sample, .corrupt),  // two pictures
    ]
    for (bytes, expected) in cases {
      #expect(Self.kind { _ = try decoder.decodePlanes(bytes) } == expected, "\(bytes.prefix(8))")
    }
    #expect(try decoder.decodePlanes(sample).format.width == 64)
  }

  /// A P picture (item 2 of the inter fixture) predicts from the IDR before it; alone, its
  /// reference is missing, and libavcodec 5.1 would decode it against a made-up grey one
  /// without a word. Only intra (IRAP) pictures are decoded.
  @Test func pictureWithoutItsReferenceIsRefused() throws {
    let reader = try HEVCFixture(
      name: "hevc-420-8bit-inter.heic", width: 64, height: 64, bitDepth: 8, chroma: .yuv420,
      colour: NCLXColour(
        colourPrimaries: 2, transferCharacteristics: 2, matrixCoefficients: 2, fullRange: false),
      chromaLocation: .left
    ).reader()
    let idr = try reader.item(1)
    let predicted = try reader.item(2)
    let decoder = try HEVCDecoder(configurationRecord: predicted.hvcC)
    #expect(Self.kind { _ = try decoder.decodePlanes(predicted.sample) } == .unsupported)
    #expect(try decoder.decodePlanes(idr.sample).format.width == 64)
    // Not even right after its reference.
    #expect(Self.kind { _ = try decoder.decodePlanes(predicted.sample) } == .unsupported)
  }

  @Test func badConfigurationRecordsAreRefused() throws {
    let hvcC = try HEVCFixture.named("hevc-420-8bit-full.heic").picture().hvcC
    var version0 = hvcC
    version0[0] = 0
    var threeByteLengths = hvcC
    threeByteLengths[21] = threeByteLengths[21] & 0xFC | 2
    var noArrays = hvcC
    noArrays[22] = 0
    for record in [[], [1], Array(hvcC.prefix(22)), version0, threeByteLengths, Array(hvcC.dropLast(3))] {
      #expect(
        Self.kind { _ = try HEVCDecoder(configurationRecord: record) } == .corrupt, "\(record.count) bytes")
    }
    // A record without parameter sets opens; its samples then have no SPS to decode with.
    let bare = try HEVCDecoder(configurationRecord: noArrays.prefix(23))
    let sample = try HEVCFixture.named("hevc-420-8bit-full.heic").picture().sample
    #expect(Self.kind { _ = try bare.decodePlanes(sample) } == .corrupt)
  }

  /// Random damage to every fixture and to real iPhone tiles: bytes changed, spans overwritten
  /// or removed, lengths rewritten to match a cut.
  @Test(arguments: ["fixtures", "iphone"])
  func damagedSamplesDecodeOrThrowCodecErrors(source: String) throws {
    var pictures: [HEIFTileReader.Picture] = []
    if source == "fixtures" {
      pictures = try HEVCFixture.all.map { try $0.picture() }
    } else {
      guard Corpus.directory != nil else { return }
      pictures = Array(
        try HEIFTileReader(Fixtures.corpus("heic-iphonexs-irot-exif6-gps.heic")).primary().tiles.prefix(2))
    }
    var random = SplitMix(state: 0x5EED)
    var outcomes = (decoded: 0, refused: 0)
    for picture in pictures {
      let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
      let expected = try decoder.decode(picture.sample) { $0.format }
      for _ in 0..<Self.variants / pictures.count {
        let damaged = Self.damage(picture.sample, &random)
        let kind = Self.kind {
          try decoder.decode(damaged) { frame in
            // The SPS comes from the record: whatever decodes has the record's format.
            #expect(frame.format == expected)
            for index in 0..<frame.format.planeCount {
              let plane = frame.plane(index)
              #expect((plane.width, plane.height) == frame.format.planeSize(index))
            }
          }
        }
        if kind == nil { outcomes.decoded += 1 } else { outcomes.refused += 1 }
      }
    }
    // Both outcomes occur: the damage reaches the decoder, not only our framing check.
    #expect(outcomes.refused > 0 && outcomes.decoded > 0, "\(outcomes)")
  }

  @Test func garbageSamplesAndRecordsNeverCrash() throws {
    var random = SplitMix(state: 42)
    let picture = try HEVCFixture.named("hevc-420-10bit.heic").picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    for _ in 0..<Self.variants {
      // Random NAL units of random types and lengths, correctly framed.
      var units: [ArraySlice<UInt8>] = []
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        let type = UInt8.random(in: 0...40, using: &random)
        let body = (0..<Int.random(in: 0...300, using: &random)).map { _ in
          UInt8.random(in: 0...255, using: &random)
        }
        units.append(ArraySlice([type << 1, 1] + body))
      }
      _ = Self.kind { _ = try decoder.decodePlanes(HEVCSampleBytes.sample(units)) }
      // A random record: version 1, then anything.
      var record =
        [UInt8(1)]
        + (0..<Int.random(in: 22...120, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random)
        }
      if Bool.random(using: &random) { record.replaceSubrange(23..., with: picture.hvcC[23...]) }
      _ = Self.kind {
        let other = try HEVCDecoder(configurationRecord: record)
        _ = try other.decodePlanes(picture.sample)
      }
    }
    #expect(try decoder.decodePlanes(picture.sample).format.bitDepth == 10)
  }

  static func damage(_ sample: [UInt8], _ random: inout SplitMix) -> [UInt8] {
    var bytes = sample
    // Keep the first NAL unit's length prefix and header most of the time, so that the damage
    // reaches the slice data instead of stopping at the framing check.
    let start = min(6, bytes.count - 1)
    switch Int.random(in: 0..<4, using: &random) {
    case 0:
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        bytes[Int.random(in: start..<bytes.count, using: &random)] ^= UInt8(
          1 << Int.random(in: 0..<8, using: &random))
      }
    case 1:
      let at = Int.random(in: start..<bytes.count, using: &random)
      let end = min(bytes.count, at + Int.random(in: 1...64, using: &random))
      for i in at..<end { bytes[i] = UInt8.random(in: 0...255, using: &random) }
    case 2:
      // Cut, and rewrite the last length so the framing still adds up.
      let units = HEVCSampleBytes.nalUnits(bytes)
      guard let last = units.last, last.count > 3 else { return bytes }
      let keep = Int.random(in: 2..<last.count, using: &random)
      return HEVCSampleBytes.sample(units.dropLast() + [last.prefix(keep)])
    default:
      bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
    }
    return bytes
  }
}
