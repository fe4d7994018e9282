import ImageCodecs
import Testing

@testable import ImagePipeline

@Suite struct OrientationTests {
  static let layouts: [PixelBuffer.Layout] = [.gray, .rgb, .rgba]

  // The 3 × 2 source, pixels numbered row-major:
  //   0 1 2
  //   3 4 5
  // and, for each EXIF orientation, the upright result's size and pixel numbers, row-major,
  // worked out by hand from the EXIF definitions.
  static let expectations: [(Orientation, Int, Int, [Int])] = [
    (.up, 3, 2, [0, 1, 2, 3, 4, 5]),
    (.upMirrored, 3, 2, [2, 1, 0, 5, 4, 3]),
    (.down, 3, 2, [5, 4, 3, 2, 1, 0]),
    (.downMirrored, 3, 2, [3, 4, 5, 0, 1, 2]),
    (.leftMirrored, 2, 3, [0, 3, 1, 4, 2, 5]),
    (.right, 2, 3, [3, 0, 4, 1, 5, 2]),
    (.rightMirrored, 2, 3, [5, 2, 4, 1, 3, 0]),
    (.left, 2, 3, [2, 5, 1, 4, 0, 3]),
  ]

  @Test(arguments: layouts, [0, 5])
  func everyOrientationOfASmallAsymmetricImageMatchesTheHandWrittenTable(
    layout: PixelBuffer.Layout, padding: Int
  ) {
    let source = PixelFixtures.numbered(width: 3, height: 2, layout: layout, padding: padding)
    for (orientation, width, height, numbers) in Self.expectations {
      let result = Orienter.apply(orientation, to: source)
      #expect(result.width == width && result.height == height, "\(orientation)")
      #expect(result.layout == layout)
      let expected = numbers.map { n in (0..<layout.channels).map { UInt8(n * 10 + $0 + 1) } }
      #expect(PixelFixtures.pixels(result) == expected, "\(orientation) \(layout)")
    }
  }

  // Larger than one 64-pixel tile and odd in both directions, so partial tiles are exercised.
  @Test(arguments: layouts)
  func oddSizedImagesSpanningSeveralTilesMatchThePerPixelDefinition(layout: PixelBuffer.Layout) {
    let (width, height) = (131, 77)
    let source = PixelFixtures.noise(width: width, height: height, layout: layout, seed: 7, padding: 3)
    for orientation in Orientation.allCases {
      let result = Orienter.apply(orientation, to: source)
      let (w, h) = orientation.displaySize(width: width, height: height)
      #expect(result.width == w && result.height == h)
      var mismatches = 0
      for y in 0..<h {
        for x in 0..<w {
          let (sx, sy): (Int, Int)
          switch orientation {
          case .up: (sx, sy) = (x, y)
          case .upMirrored: (sx, sy) = (width - 1 - x, y)
          case .down: (sx, sy) = (width - 1 - x, height - 1 - y)
          case .downMirrored: (sx, sy) = (x, height - 1 - y)
          case .leftMirrored: (sx, sy) = (y, x)
          case .right: (sx, sy) = (y, height - 1 - x)
          case .rightMirrored: (sx, sy) = (width - 1 - y, height - 1 - x)
          case .left: (sx, sy) = (width - 1 - y, x)
          }
          if PixelFixtures.pixel(result, x, y) != PixelFixtures.pixel(source, sx, sy) { mismatches += 1 }
        }
      }
      #expect(mismatches == 0, "\(orientation) \(layout)")
    }
  }

  @Test func rotatingNinetyDegreesFourTimesIsTheIdentity() {
    let source = PixelFixtures.noise(width: 70, height: 33, layout: .rgb)
    var image = source
    for _ in 0..<4 { image = Orienter.apply(.right, to: image) }
    #expect(PixelFixtures.pixels(image) == PixelFixtures.pixels(source))
    #expect(image.width == 70 && image.height == 33)
  }

  @Test(arguments: [Orientation.leftMirrored, .rightMirrored, .upMirrored, .downMirrored, .down])
  func selfInverseOrientationsAppliedTwiceAreTheIdentity(orientation: Orientation) {
    let source = PixelFixtures.noise(width: 65, height: 9, layout: .rgba)
    let twice = Orienter.apply(orientation, to: Orienter.apply(orientation, to: source))
    #expect(PixelFixtures.pixels(twice) == PixelFixtures.pixels(source))
  }

  @Test(arguments: Orientation.allCases)
  func everyOrientationIsUndoneByItsInverse(orientation: Orientation) {
    let source = PixelFixtures.noise(width: 5, height: 4, layout: .gray)
    let back = Orienter.apply(orientation.inverse, to: Orienter.apply(orientation, to: source))
    #expect(PixelFixtures.pixels(back) == PixelFixtures.pixels(source))
  }

  @Test(arguments: Orientation.allCases)
  func composedOrientationEqualsApplyingBothInTurn(first: Orientation) {
    let source = PixelFixtures.numbered(width: 4, height: 3, layout: .rgb)
    for second in Orientation.allCases {
      let inTurn = Orienter.apply(second, to: Orienter.apply(first, to: source))
      let composed = Orienter.apply(first.followed(by: second), to: source)
      #expect(PixelFixtures.pixels(inTurn) == PixelFixtures.pixels(composed), "\(first) then \(second)")
      #expect(inTurn.width == composed.width)
    }
  }

  @Test(arguments: [0, 9, -1, 255, 65535])
  func exifValuesOutsideOneToEightCountAsUpright(value: Int) {
    #expect(Orientation(exifValue: value) == .up)
  }

  @Test func exifValuesOneToEightMapToTheirOrientation() {
    #expect((1...8).map { Orientation(exifValue: $0).rawValue } == Array(1...8))
  }

  // irot counter-clockwise degrees, imir axis (libheif: 0 = top-bottom flip, 1 = left-right flip)
  // and the EXIF orientation with the same effect.
  static let heifCases: [(Int, Int?, Orientation)] = [
    (0, nil, .up), (90, nil, .left), (180, nil, .down), (270, nil, .right),
    (0, 0, .downMirrored), (0, 1, .upMirrored),
    (90, 0, .leftMirrored), (90, 1, .rightMirrored),
    (180, 0, .upMirrored), (180, 1, .downMirrored),
    (270, 0, .rightMirrored), (270, 1, .leftMirrored),
  ]

  @Test(arguments: heifCases.indices)
  func heifRotationThenMirrorMapsToTheEquivalentExifOrientation(index: Int) {
    let (degrees, axis, expected) = Self.heifCases[index]
    #expect(Orientation(heifRotationCCW: degrees, mirrorAxis: axis) == expected)
  }

  @Test(arguments: [0, 90, 180, 270], [nil, 0, 1] as [Int?])
  func heifTransformsAppliedStepByStepMatchTheComposedOrientation(degrees: Int, axis: Int?) {
    let source = PixelFixtures.numbered(width: 3, height: 2, layout: .gray)
    // libheif's steps: rotate counter-clockwise, then flip rows (axis 0) or columns (axis 1).
    var image = source
    for _ in 0..<(degrees / 90) { image = Orienter.apply(.left, to: image) }
    if let axis { image = Orienter.apply(axis == 0 ? .downMirrored : .upMirrored, to: image) }
    let composed = Orienter.apply(Orientation(heifRotationCCW: degrees, mirrorAxis: axis), to: source)
    #expect(PixelFixtures.pixels(image) == PixelFixtures.pixels(composed))
  }

  @Test func uprightReturnsTheInputUntouched() {
    let source = PixelFixtures.numbered(width: 3, height: 2, layout: .rgb, padding: 2)
    let result = Orienter.apply(.up, to: source)
    #expect(result.bytes == source.bytes && result.rowBytes == source.rowBytes)
  }

  @Test func premultipliedFlagSurvivesOrientation() {
    var source = PixelFixtures.numbered(width: 3, height: 2, layout: .rgba)
    source.premultiplied = true
    #expect(Orienter.apply(.right, to: source).premultiplied)
  }

  @Test(arguments: Orientation.allCases)
  func singlePixelAndSingleRowImagesOrientWithoutTrouble(orientation: Orientation) {
    let row = PixelFixtures.numbered(width: 5, height: 1, layout: .rgb)
    let result = Orienter.apply(orientation, to: row)
    #expect(result.width * result.height == 5)
    #expect(Set(PixelFixtures.pixels(result)) == Set(PixelFixtures.pixels(row)))
    let dot = PixelFixtures.numbered(width: 1, height: 1, layout: .rgba)
    #expect(Orienter.apply(orientation, to: dot).bytes == dot.bytes)
  }
}
