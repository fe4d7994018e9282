import Foundation
import ImageCodecs
import Synchronization
import Testing

/// HEVCDecoder on the committed fixtures: formats, VUI colour, plane contents, 8-bit rounding,
/// reuse, limits and the log.
@Suite(.timeLimit(.minutes(1)))
struct HEVCDecoderTests {
  @Test(arguments: HEVCFixture.all)
  func fixtureDecodesToItsFormat(fixture: HEVCFixture) throws {
    let picture = try fixture.picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    let format = try decoder.decode(picture.sample) { frame in frame.format }
    #expect(format.width == fixture.width && format.height == fixture.height)
    #expect(format.bitDepth == fixture.bitDepth)
    #expect(format.chroma == fixture.chroma)
    #expect(format.colour == fixture.colour)
    #expect(format.chromaLocation == fixture.chromaLocation)
    #expect(format.planeCount == (fixture.chroma == .monochrome ? 1 : 3))
  }

  /// Every sample inside a patch, read in place through the zero-copy API, is the value the
  /// generator wrote, within 1 (8-bit) or 2 (10-bit) of lossy coding.
  @Test(arguments: HEVCFixture.all)
  func planesHoldTheKnownPatchValues(fixture: HEVCFixture) throws {
    let picture = try fixture.picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    let tolerance = fixture.bitDepth == 8 ? 1 : 2
    let (checked, worst) = try decoder.decode(picture.sample) { frame in
      var checked = 0
      var worst = 0
      for component in 0..<frame.format.planeCount {
        let plane = frame.plane(component)
        #expect((plane.width, plane.height) == frame.format.planeSize(component))
        #expect(plane.bytesPerSample == (fixture.bitDepth > 8 ? 2 : 1))
        #expect(plane.rowBytes >= plane.width * plane.bytesPerSample)
        for y in 0..<plane.height {
          let row: [Int] =
            plane.bytesPerSample == 1 ? plane.row8(y).map { Int($0) } : plane.row16(y).map { Int($0) }
          for x in 0..<plane.width where fixture.isInterior(x: x, y: y, component: component) {
            let factors = component == 0 ? (1, 1) : fixture.chroma.subsampling!
            let expected = fixture.value(
              patch: fixture.patch(x: x * factors.0, y: y * factors.1), component: component)
            worst = max(worst, abs(row[x] - expected))
            checked += 1
          }
        }
      }
      return (checked, worst)
    }
    #expect(checked > fixture.width * fixture.height / 8, "too few interior samples checked")
    #expect(worst <= tolerance, "a sample is \(worst) away from its patch value")
  }

  /// The 8-bit copy holds the patch values, 10-bit ones rounded as HEVCSampleScale says.
  @Test(arguments: HEVCFixture.all)
  func eightBitPlanesHoldTheRoundedPatchValues(fixture: HEVCFixture) throws {
    let picture = try fixture.picture()
    let decoded = try HEVCDecoder(configurationRecord: picture.hvcC).decodePlanes(picture.sample)
    var planes = [decoded.planes.luma]
    if case .ycbcr(let ycbcr) = decoded.planes {
      planes += [ycbcr.cb, ycbcr.cr]
      #expect(ycbcr.subsampling == fixture.chroma.subsampling!)
    }
    #expect(planes.count == decoded.format.planeCount)
    for (component, plane) in planes.enumerated() {
      #expect(plane.layout == .gray && (plane.width, plane.height) == decoded.format.planeSize(component))
      let scale = HEVCSampleScale.table(
        bitDepth: fixture.bitDepth, fullRange: fixture.colour.fullRange, chroma: component > 0)
      let factors = component == 0 ? (1, 1) : fixture.chroma.subsampling!
      for y in 0..<plane.height {
        for x in 0..<plane.width where fixture.isInterior(x: x, y: y, component: component) {
          let stored = fixture.value(
            patch: fixture.patch(x: x * factors.0, y: y * factors.1), component: component)
          let actual = Int(plane.bytes[y * plane.rowBytes + x])
          #expect(abs(actual - Int(scale[stored])) <= 1, "plane \(component) at (\(x), \(y))")
        }
      }
    }
  }

  @Test func tenBitSamplesRoundToTheNearestEightBitCode() {
    let limited = HEVCSampleScale.table(bitDepth: 10, fullRange: false, chroma: false)
    // Limited range: the 8-bit code is the 10-bit one over 4, rounded (not truncated).
    #expect(limited[64] == 16 && limited[940] == 235 && limited[512] == 128)
    #expect(limited[241] == 60 && limited[242] == 61 && limited[243] == 61)
    #expect(
      limited[1019] == 255 && limited[1023] == 255 && limited[0] == 0 && limited[1] == 0 && limited[2] == 1)
    #expect(HEVCSampleScale.table(bitDepth: 10, fullRange: false, chroma: true) == limited)
    // Full range luma: 0…1023 onto 0…255.
    let luma = HEVCSampleScale.table(bitDepth: 10, fullRange: true, chroma: false)
    #expect(luma[0] == 0 && luma[1023] == 255 && luma[1000] == 249 && luma[512] == 128 && luma[2] == 0)
    // Full range chroma: neutral 512 stays 128.
    let chroma = HEVCSampleScale.table(bitDepth: 10, fullRange: true, chroma: true)
    #expect(chroma[512] == 128 && chroma[0] == 0 && chroma[1023] == 255 && chroma[511] == 128)
    // 8 bits: the identity, whatever the range.
    #expect(HEVCSampleScale.table(bitDepth: 8, fullRange: true, chroma: false) == (0...255).map { UInt8($0) })
    #expect(HEVCSampleScale.table(bitDepth: 12, fullRange: false, chroma: false)[4095] == 255)
    #expect(HEVCSampleScale.table(bitDepth: 12, fullRange: false, chroma: false)[3760] == 235)
  }

  @Test func oneDecoderDecodesManySamples() throws {
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    let first = try decoder.decodePlanes(picture.sample)
    for _ in 0..<20 {
      let again = try decoder.decodePlanes(picture.sample)
      #expect(again.planes.luma.bytes == first.planes.luma.bytes)
    }
  }

  @Test func aDecoderKeepsWorkingAfterABadSample() throws {
    let picture = try HEVCFixture.named("hevc-420-10bit.heic").picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    let good = try decoder.decodePlanes(picture.sample)
    #expect(throws: CodecError.self) { try decoder.decodePlanes(picture.sample.dropLast(5)) }
    #expect(throws: CodecError.self) { try decoder.decodePlanes(picture.sample + picture.sample) }
    #expect(try decoder.decodePlanes(picture.sample).planes.luma.bytes == good.planes.luma.bytes)
  }

  @Test func anErrorThrownByTheClosureReachesTheCaller() throws {
    struct Stop: Error {}
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    #expect(throws: Stop.self) { try decoder.decode(picture.sample) { _ in throw Stop() } }
    #expect(try decoder.decode(picture.sample) { $0.format.width } == 64)
  }

  @Test func pictureLargerThanAllowedIsRefusedBeforeDecoding() throws {
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()  // 64×64
    for configuration in [
      HEVCDecoder.Configuration(maximumDimension: 63), HEVCDecoder.Configuration(maximumPixels: 64 * 64 - 1),
    ] {
      let error = #expect(throws: CodecError.self) {
        try HEVCDecoder(configurationRecord: picture.hvcC, configuration: configuration)
      }
      #expect(error?.kind == .tooLarge)
    }
    _ = try HEVCDecoder(
      configurationRecord: picture.hvcC, configuration: .init(maximumDimension: 64, maximumPixels: 4096))
  }

  /// A sample that carries its own, larger SPS gets past the record's size check; libavcodec's
  /// max_pixels and our check of the frame then refuse it.
  @Test func largerPictureAnnouncedInsideTheSampleIsRefused() throws {
    let small = try HEVCFixture.named("hevc-420-8bit-30x18.heic").picture()
    let large = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    let decoder = try HEVCDecoder(
      configurationRecord: small.hvcC, configuration: .init(maximumPixels: 30 * 18))
    let sample = HEVCSampleBytes.parameterSets(of: large.hvcC) + large.sample
    let error = #expect(throws: CodecError.self) { try decoder.decodePlanes(sample) }
    #expect(error?.kind == .tooLarge)
    // Without the limit the same sample decodes: it was refused for its size only.
    let open = try HEVCDecoder(configurationRecord: small.hvcC)
    #expect(try open.decodePlanes(sample).format.width == 64)
  }

  @Test func badSettingsAreRefused() throws {
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    for configuration in [
      HEVCDecoder.Configuration(threads: 0), HEVCDecoder.Configuration(threads: 65),
      HEVCDecoder.Configuration(maximumDimension: 0), HEVCDecoder.Configuration(maximumPixels: 0),
    ] {
      #expect(configuration.validate() != nil)
      #expect(throws: CodecError.self) {
        try HEVCDecoder(configurationRecord: picture.hvcC, configuration: configuration)
      }
    }
    #expect(HEVCDecoder.Configuration().validate() == nil)
  }

  @Test func moreThreadsDecodeTheSamePicture() throws {
    let picture = try HEVCFixture.named("hevc-422-10bit.heic").picture()
    let one = try HEVCDecoder(configurationRecord: picture.hvcC).decodePlanes(picture.sample)
    let four = try HEVCDecoder(configurationRecord: picture.hvcC, configuration: .init(threads: 4))
      .decodePlanes(picture.sample)
    #expect(four.planes.luma.bytes == one.planes.luma.bytes)
  }

  /// libavcodec's messages reach the handler, with the component that logged them; with no
  /// handler they are dropped. (The log is process-wide: other tests' messages may arrive too.)
  @Test func libavcodecMessagesReachTheHandler() throws {
    let lines = Mutex<[(AVCodecLog.Level, String, String)]>([])
    AVCodecLog.setHandler(minimum: .warning) { level, component, message in
      lines.withLock { $0.append((level, component, message)) }
    }
    defer { AVCodecLog.setHandler(nil) }
    let picture = try HEVCFixture.named("hevc-420-8bit-full.heic").picture()
    let decoder = try HEVCDecoder(configurationRecord: picture.hvcC)
    // The slice header names PPS 2^22 − 1 (22 zero bits, then a one): libavcodec logs the
    // bad id and the decode fails.
    var damaged = picture.sample
    damaged.replaceSubrange(6..<10, with: [0xC0, 0x00, 0x00, 0x01])
    #expect(throws: CodecError.self) { try decoder.decodePlanes(damaged) }
    let seen = lines.withLock { $0 }
    #expect(seen.contains { $0.1 == "hevc" && $0.0 >= .warning && !$0.2.isEmpty && !$0.2.hasSuffix("\n") })
  }
}

/// Sample-building helpers for the decoder tests.
enum HEVCSampleBytes {
  /// The NAL units of an hvcC record's arrays, each with a 4-byte length: parameter sets sent
  /// inside a sample.
  static func parameterSets(of hvcC: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var at = 23
    for _ in 0..<Int(hvcC[22]) {
      let count = Int(hvcC[at + 1]) << 8 | Int(hvcC[at + 2])
      at += 3
      for _ in 0..<count {
        let length = Int(hvcC[at]) << 8 | Int(hvcC[at + 1])
        out += [0, 0, UInt8(length >> 8), UInt8(length & 0xFF)] + hvcC[at + 2..<at + 2 + length]
        at += 2 + length
      }
    }
    return out
  }

  /// The NAL units of a sample with 4-byte lengths.
  static func nalUnits(_ sample: [UInt8]) -> [ArraySlice<UInt8>] {
    var units: [ArraySlice<UInt8>] = []
    var at = 0
    while at + 4 <= sample.count {
      let length = sample[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
      units.append(sample[at + 4..<min(at + 4 + length, sample.count)])
      at += 4 + length
    }
    return units
  }

  /// `units` framed with 4-byte lengths.
  static func sample(_ units: [ArraySlice<UInt8>]) -> [UInt8] {
    var out: [UInt8] = []
    for unit in units {
      let length = UInt32(unit.count)
      out += [
        UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
      ]
      out += unit
    }
    return out
  }
}
