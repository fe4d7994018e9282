import Foundation
import ImageCodecs
import TestSupport
import Testing

@testable import ImagePipeline

/// Every corpus HEIF the HEVC path takes, through the whole pipeline twice — once on the HEVC
/// path, once with libheif (the path it replaced) — to the same output size: the two JPEGs must
/// agree to 45 dB (47.4–81 dB when measured). What separates them is only resampling and
/// rounding: libheif repeats chroma samples where the HEVC path resamples them with their
/// siting, converts to RGB at full size with its own constants (limited range scaled by 1.1689
/// and 1.1429 where 255/219 and 255/224 are exact), and the resize then works on RGB.
// Serialized: the libheif side of the 200 MP photo alone takes ~1.2 GB and several seconds of
// CPU; a dozen such decodes at once starve every other suite of a shared machine.
@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"), .serialized, .timeLimit(.minutes(5)))
struct HEVCDifferentialTests {
  /// Every HEIF in the corpus manifest that decodes (the truncated, empty and AVIF ones aside).
  static let files = [
    "heic-iphonexs-irot-exif6-gps.heic", "heic-iphone7plus-exif6-no-irot.heic",
    "heic-nokia83-irot-exif1-gps.heif", "heic-iphone13pro-grid-depth-gps.heic",
    "heic-iphone16-hdr-gainmap-gps.heic", "heic-samsung-200mp-irot.heic", "heic-xiaomi-large-exif-gps.heic",
    "heic-sony-a7s3-10bit.hif", "heic-alpha-8bit.heif", "heic-alpha-10bit-odd-size.heif",
    "heic-multi-image-thumbnails.heic", "heic-misnamed-as.jpg",
  ]

  static func pipeline(fastPath: Bool) throws -> Pipeline {
    var configuration = Pipeline.Configuration()
    configuration.hevcFastPath = fastPath
    // At quality 100 the encoder's rounding is small enough not to amplify sub-level
    // differences: what is compared is the two decodes and resamplings. (At the default 85,
    // requantising turns the same differences into 41.7–63 dB, the Nokia file lowest.)
    configuration.quality = 100
    configuration.memoryBudget = MemoryBudget(capacity: 4 << 30)
    // What is compared is the pictures, not the speed: a loaded machine must not turn the
    // libheif side of the 200 MP photo into `deadline_exceeded`.
    configuration.deadline = .seconds(600)
    return try Pipeline(configuration: configuration)
  }

  @Test(arguments: files)
  func theHEVCPathAgreesWithLibheif(file: String) throws {
    let input = try corpusBytes(file)
    let header = try ImageHeader.read(input, format: FormatSniffer.sniff(input))
    #expect(header.heif?.plan?.path == .hevc, "\(file) no longer takes the HEVC path")
    let fast = try Self.pipeline(fastPath: true).process(input)
    let reference = try Self.pipeline(fastPath: false).process(input)
    #expect((fast.width, fast.height) == (reference.width, reference.height))
    #expect(fast.source.orientation == reference.source.orientation)
    let a = try JPEGCodec.decode(fast.jpeg)
    let b = try JPEGCodec.decode(reference.jpeg)
    guard (a.width, a.height, a.layout) == (b.width, b.height, b.layout) else {
      Issue.record("\(file): \(a.width)x\(a.height) against libheif's \(b.width)x\(b.height)")
      return
    }
    let psnr = ImageCompare.psnr(a.bytes, b.bytes)
    #expect(psnr >= 45, "\(file): \(psnr) dB against libheif")
  }
}
