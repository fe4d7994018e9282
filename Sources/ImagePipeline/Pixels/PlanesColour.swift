import ImageCodecs

/// Output-size 4:2:0 planes made JFIF Y′CbCr (BT.601, full range) in sRGB, in place, so that
/// the encoder takes them as they are (`JPEGCodec.encode(planes:quality:)`).
///
/// The RGB route this replaces made a full-size RGB buffer (9 MiB at 2048 × 1536, each page a
/// fault in a fresh process), converted its colour there, and had the encoder turn it back into
/// Y′CbCr and subsample it. Here a band of rows at a time becomes RGB in a small buffer that
/// stays in cache (chroma repeated over the 2 × 2 luma it covers, as `YCbCrConverter` and
/// TurboJPEG's YUV decode do), is converted to sRGB by the same `ColourTransform` as the RGB
/// route, and goes back through TurboJPEG's RGB → Y′CbCr and 2 × 2 averaging (what its encoder
/// does to RGB). JFIF planes with no colour to convert are left untouched.
enum PlanesColour {
  /// Luma rows converted at a time (even, so chroma rows never straddle two bands).
  static let bandRows = 16

  /// Whether `planes` can take this route: 4:2:0 with even sides, chroma centred.
  static func encodable(_ planes: YCbCrPlanes) -> Bool {
    let half = (planes.width / 2, planes.height / 2)
    return planes.subsampling == (2, 2) && planes.siting == .centred && planes.width % 2 == 0
      && planes.height % 2 == 0 && (planes.cb.width, planes.cb.height) == half
      && (planes.cr.width, planes.cr.height) == half
  }

  /// Converts encodable `planes` in place from their matrix, range and `colour` to JFIF
  /// Y′CbCr in sRGB.
  static func toJFIFsRGB(_ planes: inout YCbCrPlanes, from colour: ColourDescription) throws(PipelineError) {
    precondition(encodable(planes), "PlanesColour: planes are not 4:2:0 with even sides")
    if planes.isJFIF, case .untagged = colour { return }
    let (jfif, matrix, range) = (planes.isJFIF, planes.matrix, planes.range)
    for top in stride(from: 0, to: planes.height, by: bandRows) {
      let rows = min(bandRows, planes.height - top)
      let band = band(of: planes, top: top, rows: rows, matrix: matrix, range: range)
      // JFIF planes go through TurboJPEG's SIMD conversion both ways (as `MergePlanesStep`
      // and the encoder would); other matrices and ranges through `YCbCrConverter` and back
      // in Swift. Both repeat chroma over its 2 × 2 luma, so bands join without seams.
      var rgb = (jfif ? try? JPEGCodec.rgb(from: band) : nil) ?? YCbCrConverter.rgb(from: band)
      ColourTransform.toSRGB(&rgb, from: colour)
      do {
        try JPEGCodec.storeYUV(rgb, into: &planes, atRow: top)
      } catch {
        throw PipelineError(error, while: "converting planes to sRGB")
      }
    }
  }

  /// Luma rows `top ..< top + rows` and the chroma rows they cover, copied into tight planes.
  private static func band(
    of planes: YCbCrPlanes, top: Int, rows: Int, matrix: YCbCrMatrix, range: YCbCrRange
  ) -> YCbCrPlanes {
    func rowsOf(_ plane: PixelBuffer, _ first: Int, _ count: Int) -> PixelBuffer {
      var bytes = [UInt8](repeating: 0, count: plane.width * count)
      plane.bytes.withUnsafeBufferPointer { source in
        bytes.withUnsafeMutableBufferPointer { target in
          for row in 0..<count {
            (target.baseAddress! + row * plane.width).update(
              from: source.baseAddress! + (first + row) * plane.rowBytes, count: plane.width)
          }
        }
      }
      return PixelBuffer(width: plane.width, height: count, layout: .gray, bytes: bytes)
    }
    return YCbCrPlanes(
      luma: rowsOf(planes.luma, top, rows), cb: rowsOf(planes.cb, top / 2, rows / 2),
      cr: rowsOf(planes.cr, top / 2, rows / 2), subsampling: (2, 2), matrix: matrix, range: range,
      siting: .centred)
  }
}
