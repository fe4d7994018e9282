import Testing

@testable import ImagePipeline

/// The plan reader on fixtures damaged by hand: limits hold before anything is allocated, and
/// each broken structure gets a clean refusal.
@Suite struct HEIFPlanReaderBoundsTests {
  static func fixture(_ name: String) throws -> [UInt8] { try HEIFDecodePlanTests.fixture(name) }

  /// The offset of the first `type` box in `bytes`.
  static func offset(of type: String, in bytes: [UInt8]) throws -> Int {
    try #require(HEIFDecodePlanTests.find(type, in: bytes)).lowerBound
  }

  @Test func itemLimitIsEnforcedWhileReading() throws {
    var limits = Limits()
    limits.maxHEIFItems = 4
    #expect(throws: HEIFBoxReader.Failure.tooManyItems(5)) {
      try HEIFBoxReader.read(try Self.fixture("grid-2x2.heic"), limits: limits)
    }
    let bytes = try Self.fixture("grid-2x2.heic")
    do {
      _ = try ImageHeader.read(bytes, format: .heif, limits: limits)
      Issue.record("accepted over the item limit")
    } catch {
      #expect(error.code == "too_many_items")
    }
  }

  @Test func tileLimitIsEnforcedBeforeTheTilesAreRead() throws {
    var limits = Limits()
    limits.maxHEIFTiles = 3
    let info = try HEIFBoxReader.read(try Self.fixture("grid-2x2.heic"), limits: limits)
    #expect(info.refusal?.kind == .tooManyItems && info.plan == nil)
  }

  @Test func idenThatDerivesFromItselfIsCorrupt() throws {
    var bytes = try Self.fixture("iden-primary.heic")
    // iref v0: `dimg` entry = size, type, from (2), count (2), to (2): point the iden at itself.
    let dimg = try Self.offset(of: "dimg", in: bytes) + 8
    #expect(bytes[dimg] == 0 && bytes[dimg + 1] == 2 && bytes[dimg + 5] == 1)
    bytes[dimg + 5] = 2
    let info = try HEIFBoxReader.read(bytes)
    #expect(info.refusal?.kind == .corrupt && info.refusal?.reason.contains("itself") == true)
  }

  @Test func extentPastTheEndIsTruncated() throws {
    let bytes = try Self.fixture("mif2-brand.heic")
    // Cut the last 10 bytes of mdat (the only item's data).
    let info = try HEIFBoxReader.read(Array(bytes.dropLast(10)))
    #expect(info.refusal?.kind == .truncated)
  }

  @Test func ilocFieldWidthsOtherThanZeroFourOrEightMakeTheLocationsUnreadable() throws {
    var bytes = try Self.fixture("mif2-brand.heic")
    let iloc = try Self.offset(of: "iloc", in: bytes)
    #expect(bytes[iloc + 12] == 0x44)
    bytes[iloc + 12] = 0x24  // offset_size 2
    let info = try HEIFBoxReader.read(bytes)
    #expect(info.refusal?.kind == .corrupt && info.refusal?.reason.contains("iloc") == true)
  }

  @Test func gridWithTooFewTilesIsCorrupt() throws {
    var bytes = try Self.fixture("grid-2x2.heic")
    // The grid payload in idat: version, flags, rows − 1, columns − 1 → make it 3 rows.
    let idat = try Self.offset(of: "idat", in: bytes) + 8
    #expect(bytes[idat + 2] == 1)
    bytes[idat + 2] = 2
    let info = try HEIFBoxReader.read(bytes)
    #expect(info.refusal?.kind == .corrupt && info.refusal?.reason.contains("has 4 tiles") == true)
  }

  @Test func missingHVCCSendsTheImageToLibheif() throws {
    var bytes = try Self.fixture("mif2-brand.heic")
    let hvcC = try Self.offset(of: "hvcC", in: bytes)
    // Renamed to another property the fast path knows (hvcC is marked essential).
    bytes.replaceSubrange((hvcC + 4)..<(hvcC + 8), with: Array("pasp".utf8))
    let plan = try #require(try HEIFBoxReader.read(bytes).plan)
    #expect(plan.path == .libheif(.hevcConfiguration("no hvcC property")))
  }

  @Test func everyTruncationOfAFixtureIsRefusedOrPlannedWithoutATrap() throws {
    for name in HEIFDecodePlanTests.fixtureNames {
      let bytes = try Self.fixture(name)
      for cut in stride(from: 0, to: bytes.count, by: 7) {
        guard let info = try? HEIFBoxReader.read(Array(bytes[..<cut])) else { continue }
        #expect((info.plan == nil) != (info.refusal == nil))
        if let plan = info.plan {
          for range in plan.image.codedItems.flatMap(\.data) { #expect(range.upperBound <= cut) }
        }
      }
    }
  }

  @Test func cleanApertureOutsideTheImageIsCorrupt() throws {
    #expect(throws: HEIFRefusal.self) {
      try HEIFPlanReader.checkCleanApertures(
        [.rotateCCW(90), HEIFGeometryTests.clap(3, 3, dx: 100)], size: HEIFSize(width: 64, height: 48))
    }
    #expect(throws: Never.self) {
      try HEIFPlanReader.checkCleanApertures(
        [.rotateCCW(90), HEIFGeometryTests.clap(3, 3, dx: 20)], size: HEIFSize(width: 64, height: 48))
    }
  }
}
