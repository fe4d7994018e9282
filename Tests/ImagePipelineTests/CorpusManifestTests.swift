import Foundation
import ImageCodecs
import TestSupport
import Testing

@testable import ImagePipeline

/// One corpus file and what the pipeline must do with it (MANIFEST.tsv plus the policy of issue 3).
struct CorpusCase: CustomStringConvertible, Sendable {
  enum Outcome: Sendable {
    case accept(width: Int, height: Int)
    case reject(codes: Set<String>)
  }

  let file: String
  let outcome: Outcome
  var description: String { file }

  /// Reads MANIFEST.tsv: accepted files are expected at their display size fitted into 2048.
  static func all() -> [CorpusCase] {
    guard let dir = corpusDirectory,
      let text = try? String(contentsOf: dir.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
    else { return [] }
    return text.split(separator: "\n").dropFirst().compactMap { line in
      let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      guard columns.count >= 13 else { return nil }
      let file = columns[0]
      if let codes = rejections[file] { return CorpusCase(file: file, outcome: .reject(codes: codes)) }
      var size = (Int(columns[8]) ?? 0, Int(columns[9]) ?? 0)
      if let override = displayOverrides[file] { size = override }
      let fitted = Resampler.fitted(width: size.0, height: size.1, maxEdge: 2048)
      return CorpusCase(file: file, outcome: .accept(width: fitted.width, height: fitted.height))
    }
  }

  /// Where the policy of issue 3 decides a display size the manifest leaves open.
  static let displayOverrides: [String: (Int, Int)] = [
    // iOS 11: EXIF 6 without irot → EXIF applies (no miaf brand).
    "heic-iphone7plus-exif6-no-irot.heic": (3024, 4032),
    // Wrong irot with EXIF 1 and no miaf brand → EXIF wins: upright landscape.
    "heic-nokia83-irot-exif1-gps.heif": (4608, 3456),
  ]

  static let truncatedOrCorrupt: Set<String> = ["truncated", "corrupt"]
  static let rejections: [String: Set<String>] = [
    "jpeg-pixel6-ultrahdr-gps-truncated.jpg": truncatedOrCorrupt,
    "jpeg-12bit-precision.jpg": ["unsupported_jpeg_precision"],
    "jpeg-bomb-20000x14000.jpg": ["pixel_limit"],
    "jpeg-truncated-progressive.jpg": truncatedOrCorrupt,
    "jpeg-truncated-half.jpg": truncatedOrCorrupt,
    "jpeg-corrupt-header.jpg": truncatedOrCorrupt,
    "jpeg-1-byte.jpg": ["unsupported_format"],
    "heic-truncated.heic": truncatedOrCorrupt,
    "heic-corrupt-canon-10bit.hif": truncatedOrCorrupt,
    "heic-empty-0-bytes.heic": ["empty"],
    "avif-sequence-animated-alpha.avifs": ["animated_unsupported"],
    "avif-bomb-17000x17000.avif": ["pixel_limit"],
    "avif-truncated.avif": truncatedOrCorrupt,
    "png-truncated.png": truncatedOrCorrupt,
    "png-bad-crc.png": ["corrupt"],
    "png-bad-signature.png": ["unsupported_format"],
    "png-bomb-16383x16383.png": ["pixel_limit"],
    "webp-truncated.webp": truncatedOrCorrupt,
    "gif-bomb-frame-extents.gif": ["corrupt"],
    "gif-truncated.gif": truncatedOrCorrupt,
    "not-image-pdf.jpg": ["unsupported_format"],
    "not-image-html.jpg": ["unsupported_format"],
    "not-image-svg-giant.jpg": ["unsupported_format"],
  ]
}

let corpusDirectory =
  ProcessInfo.processInfo.environment["ATTACHD_CORPUS"].map { URL(fileURLWithPath: $0) }
  ?? Corpus.directory

@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct CorpusManifestTests {
  @Test func manifestListsEveryCorpusFile() {
    #expect(CorpusCase.all().count == 80)
  }

  @Test(arguments: CorpusCase.all())
  func corpusFileGivesItsExpectedOutcome(_ item: CorpusCase) throws {
    let input = try corpusBytes(item.file)
    // The outcome is what is tested here, not the time: the 80 cases run at once on however
    // few cores, so a 200 MP decode can take longer than the default deadline's 30 s of wall
    // time (the deadline has its own tests).
    var configuration = Pipeline.Configuration()
    configuration.deadline = .seconds(600)
    let pipeline = try Pipeline(configuration: configuration)
    let clock = ContinuousClock()
    let started = clock.now
    switch item.outcome {
    case .accept(let width, let height):
      // Every model profile too, in the same run, as an upload asking for them all would.
      let result = try pipeline.process(input, profiles: ModelProfile.allCases)
      #expect((result.width, result.height) == (width, height))
      try ModelProfileTests.checkRenditions(of: result, file: item.file)
      try JPEGOutputVerifier.verify(result.jpeg)
      let decoded = try JPEGCodec.readHeader(result.jpeg)
      #expect((decoded.width, decoded.height) == (width, height))
      #expect(!result.jpeg.containsSequence(Array("Exif\0\0".utf8)))
      #expect(!result.jpeg.containsSequence(Array("ICC_PROFILE".utf8)))
      #expect(clock.now - started < .seconds(90))
    case .reject(let codes):
      do {
        let result = try pipeline.process(input)
        Issue.record("accepted \(item.file) as \(result.width)x\(result.height); expected \(codes)")
      } catch {
        #expect(codes.contains(error.code), "\(item.file): \(error)")
      }
      #expect(clock.now - started < .seconds(10))
    }
  }
}

extension Array where Element == UInt8 {
  func containsSequence(_ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= count else { return false }
    for start in 0...(count - needle.count) where self[start] == needle[0] {
      if self[start..<(start + needle.count)].elementsEqual(needle) { return true }
    }
    return false
  }
}
