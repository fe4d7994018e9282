import Foundation
import Testing

@testable import ImageCodecs
@testable import ImagePipeline

@Suite struct YCbCrConverterTests {
  static let matrices: [YCbCrMatrix] = [.bt601, .bt709, .bt2020NonConstant, .smpte240m, .fcc]
  static let ranges: [YCbCrRange] = [.full, .limited]

  /// Noise planes of `width` × `height` with chroma subsampled by `factors` (rounded up on an odd
  /// side), rows padded by a few bytes so that strides are exercised.
  static func planes(
    width: Int, height: Int, factors: (Int, Int), matrix: YCbCrMatrix, range: YCbCrRange, seed: UInt32
  ) -> YCbCrPlanes {
    let chroma = ((width + factors.0 - 1) / factors.0, (height + factors.1 - 1) / factors.1)
    return YCbCrPlanes(
      luma: PixelFixtures.noise(width: width, height: height, layout: .gray, seed: seed, padding: 3),
      cb: PixelFixtures.noise(width: chroma.0, height: chroma.1, layout: .gray, seed: seed + 1, padding: 1),
      cr: PixelFixtures.noise(width: chroma.0, height: chroma.1, layout: .gray, seed: seed + 2, padding: 5),
      subsampling: factors, matrix: matrix, range: range)
  }

  /// The conversion in doubles, straight from the matrix's definition, rounded once at the end.
  static func reference(_ planes: YCbCrPlanes) -> [UInt8] {
    let (kr, kb) = planes.matrix.coefficients
    let kg = 1 - kr - kb
    var out: [UInt8] = []
    for y in 0..<planes.height {
      for x in 0..<planes.width {
        func sample(_ p: PixelBuffer, _ x: Int, _ y: Int) -> Double { Double(p.bytes[y * p.rowBytes + x]) }
        var luma = sample(planes.luma, x, y)
        let cx = x / planes.subsampling.horizontal
        let cy = y / planes.subsampling.vertical
        var cb = sample(planes.cb, cx, cy) - 128
        var cr = sample(planes.cr, cx, cy) - 128
        if planes.range == .limited {
          luma = (luma - 16) * 255 / 219
          cb *= 255.0 / 224
          cr *= 255.0 / 224
        }
        // E′y = kr R + kg G + kb B, E′pb = (B − Y) / (2(1 − kb)), E′pr = (R − Y) / (2(1 − kr)).
        let r = luma + 2 * (1 - kr) * cr
        let b = luma + 2 * (1 - kb) * cb
        let g = (luma - kr * r - kb * b) / kg
        for v in [r, g, b] { out.append(UInt8(max(0, min(255, v.rounded())))) }
      }
    }
    return out
  }

  @Test(arguments: matrices, ranges)
  func everyMatrixAndRangeIsWithinOneLevelOfTheFloatReference(matrix: YCbCrMatrix, range: YCbCrRange) {
    for (width, height, factors) in [(37, 5, (1, 1)), (40, 6, (2, 1)), (33, 8, (1, 2)), (64, 10, (2, 2))] {
      let planes = Self.planes(
        width: width, height: height, factors: factors, matrix: matrix, range: range, seed: 7)
      let rgb = YCbCrConverter.rgb(from: planes)
      #expect((rgb.width, rgb.height, rgb.layout) == (width, height, .rgb))
      let reference = Self.reference(planes)
      let worst = zip(rgb.bytes, reference).map { abs(Int($0) - Int($1)) }.max() ?? 0
      #expect(worst <= 1, "\(matrix) \(range) \(width)x\(height) \(factors): \(worst) levels")
    }
  }

  @Test func videoRangeBlackAndWhiteAndBT709PrimariesLandOnTheirRGBValues() {
    let k = YCbCrConverter.Coefficients(matrix: .bt709, range: .limited)
    #expect(YCbCrConverter.convertOne(16, 128, 128, k) == (0, 0, 0))
    #expect(YCbCrConverter.convertOne(235, 128, 128, k) == (255, 255, 255))
    // BT.709 video-range red, green and blue (ITU-R BT.709 table, 8-bit).
    let red = YCbCrConverter.convertOne(63, 102, 240, k)
    let green = YCbCrConverter.convertOne(173, 42, 26, k)
    let blue = YCbCrConverter.convertOne(32, 240, 118, k)
    #expect(red.r >= 254 && red.g <= 1 && red.b <= 1, "\(red)")
    #expect(green.r <= 1 && green.g >= 254 && green.b <= 1, "\(green)")
    #expect(blue.r <= 1 && blue.g <= 1 && blue.b >= 254, "\(blue)")
  }

  @Test(arguments: [(1, 1), (2, 1), (1, 2), (2, 2)])
  func jfifPlanesComeOutAsTurboJPEGMakesThem(factors: (Int, Int)) throws {
    let planes = Self.planes(width: 66, height: 34, factors: factors, matrix: .bt601, range: .full, seed: 11)
    let swift = YCbCrConverter.rgb(from: planes)
    let turbo = try JPEGCodec.rgb(from: planes)
    let worst = zip(swift.bytes, turbo.bytes).map { abs(Int($0) - Int($1)) }.max() ?? 0
    #expect(worst <= 1, "\(factors): \(worst) levels")
  }

  @Test func turboJPEGRefusesPlanesThatAreNotJFIF() {
    let planes = Self.planes(width: 16, height: 16, factors: (2, 2), matrix: .bt709, range: .limited, seed: 3)
    #expect(throws: CodecError.self) { try JPEGCodec.rgb(from: planes) }
  }
}
