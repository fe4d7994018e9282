import ImageCodecs

/// How a strip's Y′CbCr samples become R′G′B′ on the RGB route of `HEVCTileDecoder` (alpha,
/// and the matrices `YCbCrPlanes` cannot carry).
enum HEVCColourModel: Equatable {
  /// A Kr/Kb matrix (BT.601, 709, 2020 …) at either range.
  case ycbcr(YCbCrMatrix, YCbCrRange)
  /// H.273 matrix 0: the planes are G, B and R.
  case identity(YCbCrRange)
  /// H.273 matrix 8: Y, Cg, Co.
  case ycgco(YCbCrRange)
}

extension HEVCStrip {
  /// Columns `columns` of rows `0 ..< rows` as interleaved RGB into `output` (`outputRowBytes`
  /// apart; the other columns are not written), chroma
  /// repeated over the luma samples it covers (as libheif 1.15 does), and, with `alpha` (rows
  /// of the image's alpha plane lined up with the strip's), composited onto white as
  /// `AlphaFlattener` does: straight `(c·a + 255·(255 − a)) / 255`, premultiplied
  /// `min(c, a) + 255 − a`.
  func rgb(
    rows: Int, columns: Range<Int>, model: HEVCColourModel, alpha: StripResampler.Rows?, premultiplied: Bool,
    into output: UnsafeMutablePointer<UInt8>, outputRowBytes: Int
  ) {
    let (h, v) = subsampling
    let coefficients: YCbCrConverter.Coefficients?
    if case .ycbcr(let matrix, let range) = model {
      coefficients = YCbCrConverter.Coefficients(matrix: matrix, range: range)
    } else {
      coefficients = nil
    }
    for y in 0..<rows {
      let yRow = luma.row(y)
      let cbRow = cb.row(y / v)
      let crRow = cr.row(y / v)
      let out = output + y * outputRowBytes
      let alphaRow = alpha.map { $0.base + y * $0.rowBytes }
      for x in columns {
        let c = x / h
        var pixel: (r: UInt8, g: UInt8, b: UInt8)
        if let coefficients {
          pixel = YCbCrConverter.convertOne(yRow[x], cbRow[c], crRow[c], coefficients)
        } else {
          pixel = Self.convert(yRow[x], cbRow[c], crRow[c], model)
        }
        if let alphaRow {
          let a = alphaRow[x]
          if premultiplied {
            let white = 255 &- a
            pixel = (min(pixel.r, a) &+ white, min(pixel.g, a) &+ white, min(pixel.b, a) &+ white)
          } else {
            let a32 = UInt32(a)
            let white = 255 &* (255 &- a32)
            pixel = (
              AlphaFlattener.divide255(UInt32(pixel.r) &* a32 &+ white),
              AlphaFlattener.divide255(UInt32(pixel.g) &* a32 &+ white),
              AlphaFlattener.divide255(UInt32(pixel.b) &* a32 &+ white)
            )
          }
        }
        out[x * 3] = pixel.r
        out[x * 3 + 1] = pixel.g
        out[x * 3 + 2] = pixel.b
      }
    }
  }

  /// One pixel of the models without a Kr/Kb matrix (libheif 1.15's arithmetic).
  private static func convert(
    _ y: UInt8, _ cb: UInt8, _ cr: UInt8, _ model: HEVCColourModel
  ) -> (r: UInt8, g: UInt8, b: UInt8) {
    func full(_ value: UInt8, _ range: YCbCrRange) -> Int {
      range == .full ? Int(value) : ((Int(value) - 16) * 255 + 109) / 219
    }
    switch model {
    case .identity(let range):
      return (
        UInt8(clamping: full(cr, range)), UInt8(clamping: full(y, range)), UInt8(clamping: full(cb, range))
      )
    case .ycgco(let range):
      let luma = full(y, range)
      let cg = full(cb, range) - 128
      let co = full(cr, range) - 128
      return (UInt8(clamping: luma - cg + co), UInt8(clamping: luma + cg), UInt8(clamping: luma - cg - co))
    case .ycbcr:
      preconditionFailure("Kr/Kb matrices go through YCbCrConverter")
    }
  }
}
