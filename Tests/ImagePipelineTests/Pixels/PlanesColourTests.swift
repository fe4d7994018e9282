import ImageCodecs
import Testing

@testable import ImagePipeline

@Suite struct PlanesColourTests {
  /// Smooth 4:2:0 planes of `width` × `height`: a diagonal luma ramp and chroma ramps across
  /// and down, in `matrix` and `range`.
  static func planes(width: Int, height: Int, matrix: YCbCrMatrix, range: YCbCrRange) -> YCbCrPlanes {
    func plane(_ w: Int, _ h: Int, _ value: (Int, Int) -> Int) -> PixelBuffer {
      var bytes: [UInt8] = []
      for y in 0..<h { for x in 0..<w { bytes.append(UInt8(clamping: value(x, y))) } }
      return PixelBuffer(width: w, height: h, layout: .gray, bytes: bytes)
    }
    return YCbCrPlanes(
      luma: plane(width, height) { x, y in 30 + (x + y) * 190 / (width + height) },
      cb: plane((width + 1) / 2, (height + 1) / 2) { x, _ in 90 + x * 80 / (width / 2) },
      cr: plane((width + 1) / 2, (height + 1) / 2) { _, y in 170 - y * 80 / (height / 2) },
      subsampling: (2, 2), matrix: matrix, range: range)
  }

  /// Worst and mean absolute difference per channel.
  static func difference(_ a: PixelBuffer, _ b: PixelBuffer) -> (max: Int, mean: Double) {
    let d = zip(a.bytes, b.bytes).map { abs(Int($0) - Int($1)) }
    return (d.max() ?? 0, Double(d.reduce(0, +)) / Double(max(1, d.count)))
  }

  /// Planes converted in place to JFIF sRGB read back as the RGB route's pixels do (RGB made
  /// from the planes, then converted to sRGB): within the rounding of a 4:2:0 round trip.
  @Test(arguments: [
    (YCbCrMatrix.bt601, YCbCrRange.full, ColourDescription.untagged),
    (.bt709, .limited, .untagged),
    (
      .bt601, .full,
      .nclx(
        NCLXColour(colourPrimaries: 12, transferCharacteristics: 13, matrixCoefficients: 6, fullRange: true))
    ),
  ])
  func planesConvertedInPlaceMatchTheRGBRoute(
    matrix: YCbCrMatrix, range: YCbCrRange, colour: ColourDescription
  ) throws {
    let source = Self.planes(width: 66, height: 38, matrix: matrix, range: range)
    var reference = YCbCrConverter.rgb(from: source)
    ColourTransform.toSRGB(&reference, from: colour)
    var planes = source
    try PlanesColour.toJFIFsRGB(&planes, from: colour)
    #expect(planes.isJFIF)
    let result = YCbCrConverter.rgb(from: planes)
    let (worst, mean) = Self.difference(result, reference)
    #expect(worst <= 4, "\(matrix) \(range) \(colour)")
    #expect(mean < 1, "\(matrix) \(range) \(colour)")
  }

  /// JFIF planes with no colour to convert are left exactly as they are.
  @Test func untaggedJFIFPlanesAreLeftUntouched() throws {
    let source = Self.planes(width: 40, height: 20, matrix: .bt601, range: .full)
    var planes = source
    try PlanesColour.toJFIFsRGB(&planes, from: .untagged)
    #expect(planes.luma.bytes == source.luma.bytes && planes.cb.bytes == source.cb.bytes)
  }

  /// Encoding planes gives the JPEG encoding their RGB gives, within JPEG's own rounding;
  /// planes of an odd side are not taken.
  @Test func planesEncodeLikeTheirRGB() throws {
    let planes = Self.planes(width: 64, height: 48, matrix: .bt601, range: .full)
    let fromPlanes = try JPEGCodec.decode(try JPEGCodec.encode(planes: planes, quality: 90))
    let fromRGB = try JPEGCodec.decode(
      try JPEGCodec.encode(YCbCrConverter.rgb(from: planes), quality: 90, subsampling: .s420))
    #expect((fromPlanes.width, fromPlanes.height) == (64, 48))
    #expect(Self.difference(fromPlanes, fromRGB).mean < 1.5)
    let odd = Self.planes(width: 65, height: 48, matrix: .bt601, range: .full)
    #expect(!PlanesColour.encodable(odd))
    #expect(throws: CodecError.self) { try JPEGCodec.encode(planes: odd, quality: 90) }
  }
}
