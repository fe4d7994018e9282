import Foundation
import ImageCodecs
import Testing

/// The committed HEVC fixtures (Tests/Fixtures/hevc, made by its generate.py with ffmpeg and
/// libx265): four flat patches of known Y, Cb, Cr values per picture, in a minimal HEIF file.
struct HEVCFixture: CustomTestStringConvertible, Sendable {
  var name: String
  var width: Int
  var height: Int
  var bitDepth: Int
  var chroma: HEVCChromaFormat
  /// The VUI the generator asked x265 for, as H.273 code points.
  var colour: NCLXColour
  var chromaLocation: HEVCChromaLocation

  var testDescription: String { name }

  /// generate.py's PATCHES_8 and PATCHES_10: (Y, Cb, Cr) of the top-left, top-right,
  /// bottom-left and bottom-right patches.
  static let patches8 = [[60, 100, 200], [200, 60, 120], [120, 180, 70], [235, 128, 128]]
  static let patches10 = [[243, 403, 801], [801, 241, 479], [479, 721, 279], [940, 512, 512]]

  static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/hevc")

  static let all: [HEVCFixture] = [
    HEVCFixture(
      name: "hevc-420-8bit-full.heic", width: 64, height: 64, bitDepth: 8, chroma: .yuv420,
      colour: NCLXColour(
        colourPrimaries: 12, transferCharacteristics: 13, matrixCoefficients: 6, fullRange: true),
      chromaLocation: .left),
    HEVCFixture(
      name: "hevc-420-10bit.heic", width: 64, height: 48, bitDepth: 10, chroma: .yuv420,
      colour: NCLXColour(
        colourPrimaries: 9, transferCharacteristics: 1, matrixCoefficients: 9, fullRange: false),
      chromaLocation: .topLeft),
    HEVCFixture(
      name: "hevc-422-10bit.heic", width: 64, height: 64, bitDepth: 10, chroma: .yuv422,
      colour: NCLXColour(
        colourPrimaries: 1, transferCharacteristics: 1, matrixCoefficients: 1, fullRange: false),
      chromaLocation: .unspecified),
    HEVCFixture(
      name: "hevc-444-8bit-odd.heic", width: 33, height: 17, bitDepth: 8, chroma: .yuv444,
      colour: NCLXColour(
        colourPrimaries: 1, transferCharacteristics: 1, matrixCoefficients: 1, fullRange: false),
      chromaLocation: .unspecified),
    HEVCFixture(
      name: "hevc-400-8bit-odd.heic", width: 29, height: 35, bitDepth: 8, chroma: .monochrome,
      colour: NCLXColour(
        colourPrimaries: 2, transferCharacteristics: 2, matrixCoefficients: 2, fullRange: true),
      chromaLocation: .unspecified),
    HEVCFixture(
      name: "hevc-420-8bit-30x18.heic", width: 30, height: 18, bitDepth: 8, chroma: .yuv420,
      colour: NCLXColour(
        colourPrimaries: 2, transferCharacteristics: 2, matrixCoefficients: 2, fullRange: false),
      chromaLocation: .left),
    // Matrix 0: libavcodec returns G, B, R planes, which are Y, Cb, Cr for the identity matrix.
    HEVCFixture(
      name: "hevc-444-8bit-gbr.heic", width: 32, height: 32, bitDepth: 8, chroma: .yuv444,
      colour: NCLXColour(
        colourPrimaries: 2, transferCharacteristics: 2, matrixCoefficients: 0, fullRange: true),
      chromaLocation: .unspecified),
  ]

  /// The fixture's file, read through the test HEIF reader.
  func reader() throws -> HEIFTileReader {
    try HEIFTileReader([UInt8](Data(contentsOf: Self.directory.appendingPathComponent(name))))
  }

  /// The one picture of the primary item.
  func picture() throws -> HEIFTileReader.Picture {
    try reader().primary().tiles[0]
  }

  static func named(_ name: String) -> HEVCFixture {
    all.first { $0.name == name }!
  }

  /// The patch (0…3) that luma position (x, y) lies in, as generate.py draws them: the halves
  /// split on an even position when there is chroma subsampling.
  func patch(x: Int, y: Int) -> Int {
    let even = chroma == .yuv420 || chroma == .yuv422
    let halfWidth = even ? (width / 2) & ~1 : width / 2
    let halfHeight = even ? (height / 2) & ~1 : height / 2
    return (x >= halfWidth ? 1 : 0) + (y >= halfHeight ? 2 : 0)
  }

  /// The stored value of `component` (0 Y, 1 Cb, 2 Cr) in `patch`, at the fixture's depth.
  func value(patch: Int, component: Int) -> Int {
    (bitDepth == 8 ? Self.patches8 : Self.patches10)[patch][component]
  }

  /// Whether plane position (x, y) of `component` is at least `margin` samples (in luma units)
  /// away from every patch edge: there lossy coding may blur the values.
  func isInterior(x: Int, y: Int, component: Int, margin: Int = 3) -> Bool {
    let factors = component == 0 ? (1, 1) : chroma.subsampling ?? (1, 1)
    let (lx, ly) = (x * factors.0, y * factors.1)
    let p = patch(x: lx, y: ly)
    for dy in [-margin, margin] + [0] {
      for dx in [-margin, margin] + [0] {
        let (nx, ny) = (min(max(lx + dx, 0), width - 1), min(max(ly + dy, 0), height - 1))
        if patch(x: nx, y: ny) != p { return false }
      }
    }
    return true
  }
}
