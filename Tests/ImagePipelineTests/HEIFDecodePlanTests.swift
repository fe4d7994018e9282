import Foundation
import ImageCodecs
import ImageContainers
import Testing

@testable import ImagePipeline

/// The generated fixtures in Tests/Fixtures/heif (made by Scripts/make-heif-fixtures; see the
/// README there): what the plan says, which path takes each file, and the refusals.
@Suite struct HEIFDecodePlanTests {
  static func fixture(_ name: String) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Fixtures/heif/\(name)")
    return [UInt8](try Data(contentsOf: url))
  }

  static let fixtureNames = [
    "10bit-422.heic", "alpha.heic", "bad-grid-tile.heic", "essential-unknown.heic", "grid-2x2.heic",
    "idat-item.heic", "iden-non-primary.heic", "iden-primary.heic", "ispe-mismatch-irot.heic",
    "mif2-brand.heic",
    "multi-extent.heic", "pred-primary.heic", "sequence-msf1.heic",
  ]

  static func plan(_ name: String) throws -> HEIFDecodePlan {
    let info = try HEIFBoxReader.read(try fixture(name))
    #expect(info.refusal == nil, "\(name): \(String(describing: info.refusal))")
    return try #require(info.plan)
  }

  /// The header step's answer for a fixture: the sniffed header, or the refusal code.
  static func headerOutcome(_ name: String) throws -> Result<ImageHeader, PipelineError> {
    let bytes = try fixture(name)
    return Result { () throws(PipelineError) in
      try ImageHeader.read(bytes, format: FormatSniffer.sniff(bytes))
    }
  }

  @Test(arguments: [
    ("pred-primary.heic", "unsupported_format"), ("essential-unknown.heic", "unsupported_format"),
    ("sequence-msf1.heic", "animated_unsupported"), ("bad-grid-tile.heic", "corrupt"),
  ])
  func refusedFixturesGetTheirCode(name: String, code: String) throws {
    guard case .failure(let error) = try Self.headerOutcome(name) else {
      Issue.record("\(name) was accepted")
      return
    }
    #expect(error.code == code)
  }

  @Test(arguments: [
    "10bit-422.heic", "alpha.heic", "grid-2x2.heic", "idat-item.heic", "iden-non-primary.heic",
    "iden-primary.heic", "ispe-mismatch-irot.heic", "mif2-brand.heic", "multi-extent.heic",
  ])
  func acceptedFixturesTakeTheHEVCPath(name: String) throws {
    #expect(FormatSniffer.sniff(try Self.fixture(name)) == .heif)
    let plan = try Self.plan(name)
    #expect(plan.path == .hevc, "\(name): \(plan.path)")
    for item in plan.image.codedItems {
      let hevc = try #require(item.hevc)
      #expect(hevc.hasParameterSets && hevc.lengthSize == 4 && item.dataCount > 0)
      #expect(hevc.sequence?.size == item.ispe || name == "ispe-mismatch-irot.heic")
    }
  }

  @Test func everyFixtureIsListedAndSmall() throws {
    let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Fixtures/heif")
    let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".heic") }
    #expect(names.sorted() == Self.fixtureNames)
    for name in names { #expect(try Self.fixture(name).count < 16 << 10) }
  }

  @Test func ispeOfTheRotatedSizeIsOverruledByTheCodedSize() throws {
    let plan = try Self.plan("ispe-mismatch-irot.heic")
    #expect(plan.image.ispe == HEIFSize(width: 96, height: 128))
    #expect(plan.storedSize == HEIFSize(width: 128, height: 96))
    #expect(plan.transforms == [.rotateCCW(270)])
    #expect(plan.displaySize == HEIFSize(width: 96, height: 128))
    #expect(plan.notes.contains { $0.contains("ispe 96x128") })
    let header = try Self.headerOutcome("ispe-mismatch-irot.heic").get()
    #expect((header.width, header.height) == (128, 96))
  }

  /// libheif 1.15 decodes this file's coded 128×96 picture; with the coded size in the header the
  /// pipeline rotates it to an undistorted 96×128 (it used to stretch it into 128×96).
  @Test func ispeMismatchComesOutUprightAndUndistorted() throws {
    let result = try Pipeline().process(try Self.fixture("ispe-mismatch-irot.heic"))
    #expect((result.width, result.height) == (96, 128))
    let image = try JPEGCodec.decode(result.jpeg)
    // Stored red/green/blue/yellow (TL, TR, BL, BR) rotated 90° clockwise.
    Self.expectQuadrants(image, [.blue, .red, .yellow, .green])
    // The white marker is square: as wide as it is tall.
    let marker = Self.whiteBox(image)
    #expect(abs(marker.width - marker.height) <= 2 && marker.width >= 12, "marker \(marker)")
  }

  @Test func primaryIdenResolvesToItsSourceWithItsOwnTransformsLast() throws {
    let plan = try Self.plan("iden-primary.heic")
    #expect(plan.primaryItemType == FourCC("iden") && plan.image.itemID == 1 && plan.image.isHidden)
    #expect(plan.transforms == [.rotateCCW(90), .mirrorHorizontal])
    let geometry = plan.geometry(width: 128, height: 96)
    // 90° anti-clockwise, then left and right exchanged: the transverse orientation.
    #expect(geometry.exifOrientation == 7 && geometry.displaySize == HEIFSize(width: 96, height: 128))
    let info = try HEIFBoxReader.read(try Self.fixture("iden-primary.heic"))
    #expect(info.transformedSize == (96, 128) && info.hasRotationOrMirror)
  }

  @Test func nonPrimaryIdenLeavesThePrimaryReadableOnBothPaths() throws {
    let bytes = try Self.fixture("iden-non-primary.heic")
    let info = try HEIFBoxReader.read(bytes)
    let plan = try #require(info.plan)
    #expect(plan.image.itemID == 1 && plan.transforms.isEmpty && plan.path == .hevc)
    // The libheif path hides the data-less iden from libheif 1.15, which would refuse the file.
    #expect(info.libheifRenames.count == 1)
    let patched = try #require(HEIFReferencePatch.apply(to: bytes, info: info))
    #expect(try HEIFBoxReader.read(patched).libheifRenames.isEmpty)
    let result = try Pipeline().process(bytes)
    #expect((result.width, result.height) == (128, 96))
    Self.expectQuadrants(try JPEGCodec.decode(result.jpeg), [.red, .green, .blue, .yellow])
  }

  @Test func multiExtentItemDataIsGatheredInILOCOrder() throws {
    let bytes = try Self.fixture("multi-extent.heic")
    let plan = try Self.plan("multi-extent.heic")
    let item = try #require(plan.image.codedItems.first)
    #expect(item.data.count == 3)
    // Stored out of order with gaps: the third extent comes first in the file.
    #expect(
      item.data[2].upperBound < item.data[0].lowerBound && item.data[0].upperBound < item.data[1].lowerBound)
    let joined = bytes.withUnsafeBytes { input in item.withBytes(in: input) { [UInt8]($0) } }
    #expect(joined.count == item.dataCount)
    #expect(Self.nalUnitLengthsCover(Array(joined), lengthSize: 4))
    #expect(try Pipeline().process(bytes).width == 96)
  }

  @Test func idatItemDataLiesInsideTheIdatBox() throws {
    let bytes = try Self.fixture("idat-item.heic")
    let plan = try Self.plan("idat-item.heic")
    let range = try #require(plan.image.codedItems.first?.data.first)
    let idat = try #require(Self.find("idat", in: bytes))
    #expect(range.lowerBound == idat.lowerBound + 8 && range.upperBound == idat.upperBound)
    #expect(Self.nalUnitLengthsCover(Array(bytes[range]), lengthSize: 4))
  }

  @Test func mif2MajorBrandIsAccepted() throws {
    let bytes = try Self.fixture("mif2-brand.heic")
    #expect(FormatSniffer.sniff(bytes) == .heif)
    #expect(try HEIFBoxReader.read(bytes).majorBrand == FourCC("mif2"))
    // Even with no codec brand beside it.
    var bare = bytes
    bare.replaceSubrange(20..<24, with: Array("mif2".utf8))
    #expect(FormatSniffer.sniff(bare) == .heif)
  }

  @Test func gridOfFourTilesKeepsDIMGOrderAndItsOutputSize() throws {
    let plan = try Self.plan("grid-2x2.heic")
    let grid = try #require(plan.image.grid)
    #expect(grid.rows == 2 && grid.columns == 2 && grid.outputSize == HEIFSize(width: 120, height: 100))
    #expect(grid.tiles.map(\.itemID) == [1, 2, 3, 4] && grid.tileSize == HEIFSize(width: 64, height: 64))
    #expect(grid.sharesConfiguration)
    #expect(grid.placement(ofTile: 3) == (64, 64, 56, 36))
    #expect(plan.image.acceptsDecodedFrame(HEIFSize(width: 64, height: 64), atIndex: 2))
    #expect(!plan.image.acceptsDecodedFrame(HEIFSize(width: 48, height: 48), atIndex: 2))
    #expect(plan.colour == [.nclx(primaries: 1, transfer: 13, matrix: 6, fullRange: false)])
    let result = try Pipeline().process(try Self.fixture("grid-2x2.heic"))
    #expect((result.width, result.height) == (120, 100))
    // The 128×128 picture cut to 120×100: the quadrant borders move to x 64 and y 64.
    let image = try JPEGCodec.decode(result.jpeg)
    for (x, y, colour) in [(10, 10, Colour.red), (100, 10, .green), (10, 90, .blue), (100, 90, .yellow)] {
      #expect(Colour.at(image, x, y) == colour, "(\(x), \(y))")
    }
  }

  @Test func badGridTileIsRefusedBeforeDecoding() throws {
    let info = try HEIFBoxReader.read(try Self.fixture("bad-grid-tile.heic"))
    #expect(info.plan == nil && info.refusal?.kind == .corrupt)
    #expect(info.refusal?.reason.contains("48x48") == true)
  }

  @Test func alphaAuxiliaryHasItsOwnPlan() throws {
    let plan = try Self.plan("alpha.heic")
    let alpha = try #require(plan.alpha)
    #expect(alpha.image.itemID == 2 && alpha.matchesImageSize && !alpha.premultiplied)
    #expect(alpha.image.codedItems.first?.hevc?.chromaFormat == 0)
    #expect(plan.auxiliaries.isEmpty)
  }

  @Test func tenBit422IsReadFromHVCCAndSPS() throws {
    let plan = try Self.plan("10bit-422.heic")
    let hevc = try #require(plan.image.codedItems.first?.hevc)
    #expect(hevc.chromaFormat == 2 && hevc.bitDepthLuma == 10 && hevc.bitDepthChroma == 10)
    #expect(hevc.sequence?.chromaFormat == 2 && hevc.sequence?.bitDepthLuma == 10)
    #expect(plan.bitsPerChannel == [10, 10, 10])
  }

  @Test func sequenceWithoutPrimaryIsAnAnimationNotCorrupt() throws {
    #expect(throws: HEIFBoxReader.Failure.imageSequence) {
      try HEIFBoxReader.read(try Self.fixture("sequence-msf1.heic"))
    }
  }
}

extension HEIFDecodePlanTests {
  enum Colour: CaseIterable {
    case red, green, blue, yellow, white, other

    static func at(_ image: PixelBuffer, _ x: Int, _ y: Int) -> Colour {
      let o = y * image.rowBytes + x * image.layout.channels
      let (r, g, b) = (Int(image.bytes[o]), Int(image.bytes[o + 1]), Int(image.bytes[o + 2]))
      switch (r > 160, g > 160, b > 160) {
      case (true, false, false): return .red
      case (false, true, false): return .green
      case (false, false, true): return .blue
      case (true, true, false): return .yellow
      case (true, true, true): return .white
      default: return .other
      }
    }
  }

  /// The colours at the centres of the four quadrants (TL, TR, BL, BR) of the bottom half and
  /// right half, away from the marker.
  static func expectQuadrants(_ image: PixelBuffer, _ expected: [Colour]) {
    let (w, h) = (image.width, image.height)
    let points = [(w / 4, h * 3 / 8), (w * 3 / 4, h * 3 / 8), (w / 4, h * 3 / 4), (w * 3 / 4, h * 3 / 4)]
    let found = points.map { Colour.at(image, $0.0, $0.1) }
    #expect(found == expected)
  }

  /// The bounding box of the white pixels.
  static func whiteBox(_ image: PixelBuffer) -> (width: Int, height: Int) {
    var (minX, minY, maxX, maxY) = (Int.max, Int.max, -1, -1)
    for y in 0..<image.height {
      for x in 0..<image.width where Colour.at(image, x, y) == .white {
        (minX, minY, maxX, maxY) = (min(minX, x), min(minY, y), max(maxX, x), max(maxY, y))
      }
    }
    return maxX < 0 ? (0, 0) : (maxX - minX + 1, maxY - minY + 1)
  }

  /// Whether `data` is a whole number of length-prefixed NAL units.
  static func nalUnitLengthsCover(_ data: [UInt8], lengthSize: Int) -> Bool {
    var p = 0
    while p + lengthSize <= data.count {
      let length = data[p..<(p + lengthSize)].reduce(0) { $0 << 8 | Int($1) }
      p += lengthSize + length
    }
    return p == data.count && !data.isEmpty
  }

  /// The first top-level or `meta` child box of `type`: its range in `bytes`.
  static func find(_ type: String, in bytes: [UInt8]) -> Range<Int>? {
    let pattern = Array(type.utf8)
    for i in 4..<(bytes.count - 4) where Array(bytes[i..<(i + 4)]) == pattern {
      let size = bytes[(i - 4)..<i].reduce(0) { $0 << 8 | Int($1) }
      return (i - 4)..<(i - 4 + size)
    }
    return nil
  }
}
