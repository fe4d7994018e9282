import Foundation
import ImageCodecs
import TestSupport
import Testing

/// HEVCDecoder on the tiles of real HEIC files, checked against libheif: the luma of each of our
/// tiles must match the luma recomputed from libheif's RGB rendering of the same place.
@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"), .timeLimit(.minutes(3)))
struct HEVCCorpusTests {
  struct Case: CustomTestStringConvertible, Sendable {
    var file: String
    var tiles: Int
    var tileSize: (width: Int, height: Int)
    var bitDepth: Int
    var chroma: HEVCChromaFormat
    /// Tiles compared with libheif (all of them when nil).
    var compared: Int?
    var testDescription: String { file }
  }

  static let cases = [
    Case(
      file: "heic-iphonexs-irot-exif6-gps.heic", tiles: 48, tileSize: (512, 512), bitDepth: 8, chroma: .yuv420
    ),
    Case(
      file: "heic-iphone13pro-grid-depth-gps.heic", tiles: 48, tileSize: (512, 512), bitDepth: 8,
      chroma: .yuv420),
    // libheif 1.15 refuses this file ("Too many auxiliary image references"): no comparison.
    Case(
      file: "heic-iphone16-hdr-gainmap-gps.heic", tiles: 45, tileSize: (640, 896), bitDepth: 8,
      chroma: .yuv420,
      compared: 0),
    Case(file: "heic-sony-a7s3-10bit.hif", tiles: 4, tileSize: (2176, 1472), bitDepth: 10, chroma: .yuv422),
    // Stored 64 wide for its 29-pixel `ispe`: the decoder returns the coded picture, HEIF crops.
    Case(
      file: "heic-alpha-10bit-odd-size.heif", tiles: 1, tileSize: (64, 100), bitDepth: 10, chroma: .yuv420),
  ]

  @Test(arguments: cases)
  func everyTileDecodesAndMatchesLibheif(testCase: Case) throws {
    let bytes = try Fixtures.corpus(testCase.file)
    let image = try HEIFTileReader(bytes).primary()
    #expect(image.tiles.count == testCase.tiles)
    let decoder = try HEVCDecoder(configurationRecord: image.tiles[0].hvcC)
    var tiles: [HEVCPicture] = []
    for tile in image.tiles {
      let picture = try decoder.decodePlanes(tile.sample)
      #expect((picture.format.width, picture.format.height) == testCase.tileSize)
      #expect(picture.format.bitDepth == testCase.bitDepth && picture.format.chroma == testCase.chroma)
      tiles.append(picture)
    }
    guard testCase.compared != 0 else { return }
    let reference = try HEIFCodec.decode(
      bytes, options: .init(ignoreTransformations: true, decodingThreads: 1))
    let info = try HEIFCodec.primaryInfo(bytes)
    // libheif converts with the nclx box's matrix when the file has one, else with BT.601.
    let matrix = info.colour.nclx?.matrixCoefficients ?? 6
    for (index, tile) in tiles.enumerated() {
      let origin = (
        x: index % image.grid.columns * testCase.tileSize.width,
        y: index / image.grid.columns * testCase.tileSize.height
      )
      let psnr = Self.lumaPSNR(tile, at: origin, against: reference.pixels, matrix: matrix)
      #expect(psnr > 38, "tile \(index): luma PSNR \(psnr) dB against libheif")
    }
  }

  /// iPhone tiles enable wavefront parallel processing, so slice threads really split them.
  @Test func wavefrontThreadsDecodeTheSameTiles() throws {
    let image = try HEIFTileReader(Fixtures.corpus("heic-iphonexs-irot-exif6-gps.heic")).primary()
    let one = try HEVCDecoder(configurationRecord: image.tiles[0].hvcC)
    let three = try HEVCDecoder(configurationRecord: image.tiles[0].hvcC, configuration: .init(threads: 3))
    for tile in image.tiles.prefix(6) {
      let expected = try one.decodePlanes(tile.sample)
      let actual = try three.decodePlanes(tile.sample)
      #expect(actual.planes.luma.bytes == expected.planes.luma.bytes)
      guard case .ycbcr(let a) = actual.planes, case .ycbcr(let e) = expected.planes else {
        Issue.record("not YCbCr")
        return
      }
      #expect(a.cb.bytes == e.cb.bytes && a.cr.bytes == e.cr.bytes)
    }
  }

  @Test func alphaPlaneOfTheTenBitFileDecodesAsMonochrome() throws {
    let bytes = try Fixtures.corpus("heic-alpha-10bit-odd-size.heif")
    let alpha = try #require(try HEIFTileReader(bytes).alpha())
    let decoder = try HEVCDecoder(configurationRecord: alpha.tiles[0].hvcC)
    let picture = try decoder.decodePlanes(alpha.tiles[0].sample)
    #expect(picture.format.chroma == .monochrome && picture.format.bitDepth == 10)
    #expect(picture.format.width >= 29 && picture.format.height == 100)
    guard case .monochrome(let plane) = picture.planes else {
      Issue.record("alpha is not monochrome")
      return
    }
    // libheif's alpha channel of the same picture (cropped to the 29-pixel ispe).
    let reference = try HEIFCodec.decode(
      bytes, options: .init(ignoreTransformations: true, decodingThreads: 1))
    #expect(reference.pixels.layout == .rgba)
    var differences = 0
    for y in 0..<reference.pixels.height {
      for x in 0..<reference.pixels.width {
        let theirs = Int(reference.pixels.bytes[y * reference.pixels.rowBytes + x * 4 + 3])
        if abs(theirs - Int(plane.bytes[y * plane.rowBytes + x])) > 1 { differences += 1 }
      }
    }
    #expect(differences == 0, "\(differences) alpha samples differ from libheif's by more than 1")
  }

  /// PSNR of our 8-bit luma against the luma of libheif's RGB over the tile's visible part.
  /// Y = Kr·R + Kg·G + Kb·B undoes the YCbCr → RGB conversion whatever the chroma was, so only
  /// rounding and clipping separate the two.
  static func lumaPSNR(
    _ tile: HEVCPicture, at origin: (x: Int, y: Int), against rgb: PixelBuffer, matrix: Int
  ) -> Double {
    let (kr, kb) = matrix == 1 ? (0.2126, 0.0722) : (0.299, 0.114)
    let kg = 1 - kr - kb
    let luma = tile.planes.luma
    let fullRange = tile.format.colour.fullRange
    let width = min(luma.width, rgb.width - origin.x)
    let height = min(luma.height, rgb.height - origin.y)
    guard width > 0, height > 0 else { return .infinity }
    var squares = 0.0
    let channels = rgb.layout.channels
    for y in 0..<height {
      for x in 0..<width {
        let i = (origin.y + y) * rgb.rowBytes + (origin.x + x) * channels
        let theirs = kr * Double(rgb.bytes[i]) + kg * Double(rgb.bytes[i + 1]) + kb * Double(rgb.bytes[i + 2])
        var ours = Double(luma.bytes[y * luma.rowBytes + x])
        if !fullRange { ours = (ours - 16) * 255 / 219 }
        squares += (theirs - ours) * (theirs - ours)
      }
    }
    let mse = squares / Double(width * height)
    return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
  }
}
