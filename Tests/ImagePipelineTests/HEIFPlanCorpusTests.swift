import Foundation
import TestSupport
import Testing

@testable import ImagePipeline

/// The plan reader on every HEIF and AVIF file of the corpus: what it plans, which path takes
/// it, and how the broken ones are refused.
@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"))
struct HEIFPlanCorpusTests {
  /// Every corpus file the MANIFEST lists as HEIF or AVIF (`format` column).
  static let heifFiles: [String] = {
    guard let dir = Corpus.directory,
      let manifest = try? String(contentsOf: dir.appendingPathComponent("MANIFEST.tsv"), encoding: .utf8)
    else { return [] }
    return manifest.split(separator: "\n").dropFirst().compactMap { line in
      let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
      guard fields.count > 4, fields[4].hasPrefix("HEIF") || fields[4].hasPrefix("AVIF") else { return nil }
      return String(fields[0])
    }
  }()

  /// What each corpus file must give: the path, or the refusal code.
  static let expected: [String: String] = [
    "heic-iphonexs-irot-exif6-gps.heic": "hevc",
    "heic-iphone7plus-exif6-no-irot.heic": "hevc",
    "heic-nokia83-irot-exif1-gps.heif": "hevc",
    "heic-iphone13pro-grid-depth-gps.heic": "hevc",
    "heic-iphone16-hdr-gainmap-gps.heic": "hevc",
    "heic-samsung-200mp-irot.heic": "hevc",
    "heic-xiaomi-large-exif-gps.heic": "hevc",
    "heic-sony-a7s3-10bit.hif": "hevc",
    "heic-alpha-8bit.heif": "hevc",
    "heic-alpha-10bit-odd-size.heif": "hevc",
    "heic-multi-image-thumbnails.heic": "hevc",
    "heic-misnamed-as.jpg": "hevc",
    "heic-truncated.heic": "truncated",
    "heic-corrupt-canon-10bit.hif": "truncated",
    "avif-irot-90cw.avif": "libheif not_hevc",
    "avif-irot-imir-clap.avif": "libheif not_hevc",
    "avif-10bit-alpha.avif": "libheif not_hevc",
    "avif-10bit-icc.avif": "libheif not_hevc",
    "avif-iphone-gps-p3.avif": "libheif not_hevc",
    "avif-bomb-17000x17000.avif": "pixel_limit",
    "avif-truncated.avif": "truncated",
    "avif-sequence-animated-alpha.avifs": "animated_unsupported",
  ]

  /// The path the header step plans, or the code it refuses the file with.
  static func outcome(_ name: String) throws -> String {
    let bytes = try corpusBytes(name)
    let header: ImageHeader
    do { header = try ImageHeader.read(bytes, format: FormatSniffer.sniff(bytes)) } catch {
      return error.code
    }
    guard let plan = header.heif?.plan else { return "no plan" }
    if case .libheif(let reason) = plan.path { return "libheif \(reason.code)" }
    return "hevc"
  }

  @Test func everyHEIFAndAVIFFileOfTheManifestHasAnExpectedOutcome() {
    #expect(Set(Self.heifFiles) == Set(Self.expected.keys))
  }

  @Test(arguments: expected.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
  func corpusFileGetsItsPlanOrRefusal(name: String, outcome: String) throws {
    #expect(try Self.outcome(name) == outcome)
  }

  @Test func iPhoneXSIsA48TileGridOf512WithIrotAndDisplayP3() throws {
    let plan = try #require(try HEIFBoxReader.read(try corpusBytes("heic-iphonexs-irot-exif6-gps.heic")).plan)
    let grid = try #require(plan.image.grid)
    #expect(grid.rows == 6 && grid.columns == 8 && grid.tiles.count == 48 && grid.sharesConfiguration)
    #expect(
      grid.tileSize == HEIFSize(width: 512, height: 512)
        && grid.outputSize == HEIFSize(width: 4032, height: 3024))
    #expect(plan.transforms == [.rotateCCW(270)] && plan.displaySize == HEIFSize(width: 3024, height: 4032))
    #expect(plan.colour.contains { if case .icc = $0 { true } else { false } })
    #expect(plan.thumbnails.count == 1 && plan.thumbnails[0].ispe == HEIFSize(width: 320, height: 240))
    let hevc = try #require(grid.tiles[0].hevc)
    #expect(hevc.chromaFormat == 1 && hevc.bitDepthLuma == 8 && hevc.sequence?.size == grid.tileSize)
  }

  @Test func iPhone16GainMapAndToneMapAreListedButNotDecoded() throws {
    let plan = try #require(
      try HEIFBoxReader.read(try corpusBytes("heic-iphone16-hdr-gainmap-gps.heic")).plan)
    #expect(plan.auxiliaries.contains { $0.kind == .appleHDRGainMap })
    #expect(plan.toneMaps == [122] && plan.alpha == nil && plan.path == .hevc)
  }

  @Test func depthMapsAreAuxiliariesNotAlpha() throws {
    let plan = try #require(
      try HEIFBoxReader.read(try corpusBytes("heic-iphone7plus-exif6-no-irot.heic")).plan)
    #expect(plan.alpha == nil && plan.auxiliaries.map(\.kind) == [.depth])
  }

  @Test func sony422TenBitGridTakesTheFastPath() throws {
    let plan = try #require(try HEIFBoxReader.read(try corpusBytes("heic-sony-a7s3-10bit.hif")).plan)
    let hevc = try #require(plan.image.codedItems.first?.hevc)
    #expect(hevc.chromaFormat == 2 && hevc.bitDepthLuma == 10 && plan.image.grid?.tiles.count == 4)
    #expect(plan.colour.contains { if case .nclx = $0 { true } else { false } })
  }

  @Test func alphaOfOddSizeIsAGridOfOneTileLikeItsImage() throws {
    let plan = try #require(try HEIFBoxReader.read(try corpusBytes("heic-alpha-10bit-odd-size.heif")).plan)
    let alpha = try #require(plan.alpha)
    #expect(plan.storedSize == HEIFSize(width: 29, height: 100) && alpha.matchesImageSize)
    #expect(alpha.image.grid?.tileSize == plan.image.grid?.tileSize)
  }

  @Test func avifCleanApertureRotationAndMirrorReduceToOneCropAndOrientation() throws {
    let plan = try #require(try HEIFBoxReader.read(try corpusBytes("avif-irot-imir-clap.avif")).plan)
    #expect(plan.transforms.count == 3)
    let geometry = plan.geometry(width: 1024, height: 722)
    #expect(geometry.displaySize == HEIFSize(width: 385, height: 330))
    #expect(geometry.crop.width == 330 && geometry.crop.height == 385)
    // The clap offsets are (−308, 103) from the centre: left = −308 + 1023/2 − 329/2 = 39
    // (truncated), top = 103 + 721/2 − 384/2 = 271.5, rounded to 272 as libheif does.
    #expect(geometry.crop.x == 39 && geometry.crop.y == 272)
    #expect(geometry.exifOrientation == 5)
  }

  @Test func codedPicturesOverThePixelLimitAreRefusedWhateverTheGridSays() throws {
    var limits = Limits()
    limits.maxPixels = 47 * 512 * 512
    let info = try HEIFBoxReader.read(try corpusBytes("heic-iphonexs-irot-exif6-gps.heic"), limits: limits)
    #expect(info.refusal?.kind == .pixelLimit)
    limits.maxPixels = 48 * 512 * 512
    #expect(
      try HEIFBoxReader.read(try corpusBytes("heic-iphonexs-irot-exif6-gps.heic"), limits: limits).plan != nil
    )
  }

  @Test func truncatedFileIsRefusedEvenWhenThePrimaryIsWhole() throws {
    // Only item 2 (not the primary) is cut, by one byte.
    let info = try HEIFBoxReader.read(try corpusBytes("heic-truncated.heic"))
    #expect(info.refusal?.kind == .truncated && info.refusal?.reason.contains("item 2") == true)
  }
}
