import ImageCodecs
import ImageContainers
import Testing

@testable import ImagePipeline

/// The path rule on plans changed one fact at a time, the geometry reduction against applying
/// each transform in turn, and the reader's bounds on hand-damaged fixtures.
@Suite struct HEIFPathRuleTests {
  static func plan(_ name: String) throws -> HEIFDecodePlan {
    try #require(try HEIFBoxReader.read(try HEIFDecodePlanTests.fixture(name)).plan)
  }

  /// `plan` with its single coded item changed by `change`.
  static func changing(_ plan: HEIFDecodePlan, _ change: (inout HEIFCodedItem) -> Void) -> HEIFDecodePlan {
    var copy = plan
    guard case .coded(var item) = plan.image.content else { return plan }
    change(&item)
    copy.image.content = .coded(item)
    return copy
  }

  @Test func eightAndTenBitHEVCTakeTheFastPathAndTwelveDoesNot() throws {
    let plan = try Self.plan("mif2-brand.heic")
    #expect(HEIFPathRule.decide(plan) == .hevc)
    let twelve = Self.changing(plan) { item in
      item.hevc?.bitDepthLuma = 12
      item.hevc?.bitDepthChroma = 12
      item.hevc?.sequence?.bitDepthLuma = 12
      item.hevc?.sequence?.bitDepthChroma = 12
    }
    #expect(HEIFPathRule.decide(twelve) == .libheif(.bitDepth(luma: 12, chroma: 12)))
    #expect(HEIFPathRule.decide(twelve) != .hevc)
  }

  @Test func hvcCThatDisagreesWithItsSPSGoesToLibheif() throws {
    let plan = Self.changing(try Self.plan("mif2-brand.heic")) { $0.hevc?.chromaFormat = 3 }
    #expect(HEIFPathRule.decide(plan) == .libheif(.configurationMismatch))
  }

  @Test func missingOrUnreadableConfigurationGoesToLibheif() throws {
    let base = try Self.plan("mif2-brand.heic")
    let none = Self.changing(base) {
      $0.hevc = nil
      $0.hevcProblem = "no hvcC property"
    }
    #expect(HEIFPathRule.decide(none) == .libheif(.hevcConfiguration("no hvcC property")))
    let noSPS = Self.changing(base) { $0.hevc?.sequence = nil }
    #expect(HEIFPathRule.decide(noSPS).isLibheif)
    let noPPS = Self.changing(base) { $0.hevc?.nalArrays.removeAll { $0.type == 34 } }
    #expect(HEIFPathRule.decide(noPPS).isLibheif)
  }

  @Test func otherCodecsAndUnimplementedPropertiesGoToLibheif() throws {
    let base = try Self.plan("mif2-brand.heic")
    let av1 = Self.changing(base) { $0.itemType = FourCC("av01") }
    #expect(HEIFPathRule.decide(av1) == .libheif(.notHEVC(FourCC("av01"))))
    let layered = Self.changing(base) { $0.unknownEssentialProperties = [FourCC("lsel")] }
    #expect(HEIFPathRule.decide(layered) == .libheif(.essentialProperty(FourCC("lsel"))))
    var derived = base
    derived.derivationProperties = [FourCC("a1op")]
    #expect(HEIFPathRule.decide(derived) == .libheif(.essentialProperty(FourCC("a1op"))))
    #expect(HEIFFallbackReason.essentialProperty(FourCC("a1op")).code == "essential_property")
  }

  @Test func gridTilesOfDifferentChromaFormatsGoToLibheif() throws {
    var plan = try Self.plan("grid-2x2.heic")
    guard case .grid(var grid) = plan.image.content else { throw PlanShape.notGrid }
    grid.tiles[3].hevc?.chromaFormat = 3
    grid.tiles[3].hevc?.sequence?.chromaFormat = 3
    plan.image.content = .grid(grid)
    #expect(HEIFPathRule.decide(plan) == .libheif(.tilesDiffer))
  }

  /// 4:2:0 tiles an odd number of samples wide or high would start the next tile's chroma half a
  /// sample into the previous one's: libheif takes such grids; 4:4:4 tiles of any size stay.
  @Test func gridTilesOfHalfAChromaSampleGoToLibheif() throws {
    var plan = try Self.plan("grid-2x2.heic")
    guard case .grid(var grid) = plan.image.content else { throw PlanShape.notGrid }
    #expect(HEIFPathRule.decide(plan) == .hevc)
    grid.tileSize = HEIFSize(width: 63, height: 64)
    plan.image.content = .grid(grid)
    #expect(HEIFPathRule.decide(plan) == .libheif(.tileAlignment))
    grid.tileSize = HEIFSize(width: 64, height: 63)
    plan.image.content = .grid(grid)
    #expect(HEIFPathRule.decide(plan) == .libheif(.tileAlignment))
    for index in grid.tiles.indices {
      grid.tiles[index].hevc?.chromaFormat = 3
      grid.tiles[index].hevc?.sequence?.chromaFormat = 3
    }
    plan.image.content = .grid(grid)
    #expect(HEIFPathRule.decide(plan) == .hevc)
    #expect(HEIFFallbackReason.tileAlignment.code == "tile_alignment")
  }

  @Test func alphaOfAnotherSizeGoesToLibheif() throws {
    var plan = try Self.plan("alpha.heic")
    #expect(HEIFPathRule.decide(plan) == .hevc)
    plan.alpha?.matchesImageSize = false
    #expect(HEIFPathRule.decide(plan).isLibheif)
  }

  @Test func singleImageAcceptsOnlyItsCodedSizeFromTheDecoder() throws {
    let plan = try Self.plan("ispe-mismatch-irot.heic")
    #expect(plan.image.acceptsDecodedFrame(HEIFSize(width: 128, height: 96), atIndex: 0))
    #expect(!plan.image.acceptsDecodedFrame(HEIFSize(width: 96, height: 128), atIndex: 0))
    #expect(!plan.image.acceptsDecodedFrame(HEIFSize(width: 128, height: 96), atIndex: 1))
  }

  enum PlanShape: Error { case notGrid }
}

extension HEIFDecodePath {
  var isLibheif: Bool {
    if case .libheif = self { return true }
    return false
  }
}

/// `HEIFDecodePlan.geometry` (one crop, then one orientation) against the transforms applied
/// one after another the way libheif does, on an image whose every pixel is distinct.
@Suite struct HEIFGeometryTests {
  static func numbered(width: Int, height: Int) -> PixelBuffer {
    var bytes: [UInt8] = []
    for y in 0..<height {
      for x in 0..<width { bytes += [UInt8(x), UInt8(y), 7] }
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  static func pixel(_ image: PixelBuffer, _ x: Int, _ y: Int) -> [UInt8] {
    let o = y * image.rowBytes + x * 3
    return Array(image.bytes[o..<(o + 3)])
  }

  static func map(_ image: PixelBuffer, width: Int, height: Int, _ source: (Int, Int) -> (Int, Int))
    -> PixelBuffer
  {
    var bytes: [UInt8] = []
    for y in 0..<height {
      for x in 0..<width {
        let (sx, sy) = source(x, y)
        bytes += pixel(image, sx, sy)
      }
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  /// Each transform in turn, as libheif 1.15 applies them.
  static func stepByStep(_ image: PixelBuffer, _ transforms: [HEIFTransform]) -> PixelBuffer {
    var img = image
    for transform in transforms {
      let (w, h) = (img.width, img.height)
      switch transform {
      case .rotateCCW(let degrees):
        for _ in 0..<(degrees / 90) {
          let (cw, ch) = (img.width, img.height)
          img = map(img, width: ch, height: cw) { x, y in (cw - 1 - y, x) }
        }
      case .mirrorVertical: img = map(img, width: w, height: h) { x, y in (x, h - 1 - y) }
      case .mirrorHorizontal: img = map(img, width: w, height: h) { x, y in (w - 1 - x, y) }
      case .cleanAperture(let clap):
        guard let r = clap.rectangle(width: w, height: h) else { continue }
        img = map(img, width: r.width, height: r.height) { x, y in (r.x + x, r.y + y) }
      }
    }
    return img
  }

  static func clap(_ w: UInt32, _ h: UInt32, dx: Int32 = 0, dy: Int32 = 0, d: UInt32 = 1) -> HEIFTransform {
    .cleanAperture(
      HEIFCleanAperture(
        widthN: w, widthD: 1, heightN: h, heightD: 1, horizontalOffsetN: dx, horizontalOffsetD: d,
        verticalOffsetN: dy, verticalOffsetD: d))
  }

  static let chains: [[HEIFTransform]] = [
    [], [.rotateCCW(90)], [.rotateCCW(180)], [.rotateCCW(270)], [.mirrorVertical], [.mirrorHorizontal],
    [.rotateCCW(90), .mirrorVertical], [.rotateCCW(270), .mirrorHorizontal],
    [.mirrorHorizontal, .rotateCCW(90)],
    [clap(5, 3)], [clap(4, 4, dx: 1, dy: -1)], [clap(5, 3, dx: -3, dy: 1, d: 2), .rotateCCW(90)],
    [.rotateCCW(90), clap(3, 5, dx: 1, dy: 2)],
    [clap(6, 4), .rotateCCW(270), .mirrorVertical, clap(3, 2, dx: 1)],
    [.mirrorHorizontal, clap(2, 2, dx: -2, dy: -1), .rotateCCW(180)],
  ]

  @Test(arguments: chains)
  func oneCropThenOneOrientationEqualsEveryTransformInTurn(transforms: [HEIFTransform]) throws {
    let image = Self.numbered(width: 9, height: 7)
    var plan = try HEIFPathRuleTests.plan("mif2-brand.heic")
    plan.transforms = transforms
    let geometry = plan.geometry(width: image.width, height: image.height)
    let c = geometry.crop
    let cropped = Self.map(image, width: c.width, height: c.height) { x, y in (c.x + x, c.y + y) }
    let oriented = Orienter.apply(geometry.orientation, to: cropped)
    let expected = Self.stepByStep(image, transforms)
    #expect((oriented.width, oriented.height) == (expected.width, expected.height))
    #expect(oriented.bytes == expected.bytes)
    #expect(geometry.displaySize == HEIFSize(width: expected.width, height: expected.height))
  }

  @Test func ignoredTransformsKeepTheWholeStoredImage() throws {
    var plan = try HEIFPathRuleTests.plan("mif2-brand.heic")
    plan.transforms = [.rotateCCW(90), Self.clap(5, 3)]
    let geometry = plan.geometry(width: 64, height: 48, applyTransforms: false)
    #expect(geometry.exifOrientation == 1 && geometry.crop == (0, 0, 64, 48))
  }
}
