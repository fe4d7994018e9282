import ImageCodecs

/// One decode on the HEVC fast path (see `HEVCTileDecoder`): pictures in, tile row by tile row
/// (or band by band of a single picture), output planes or pixels out. What the pictures do not
/// say until one is decoded — the VUI's matrix, range and chroma siting — sets up the resampler
/// at the first picture.
final class HEVCTileRun {
  private let source: HEVCTileSource
  private let plan: HEIFDecodePlan
  private let layout: HEVCTileDecoder.Layout
  private let checkpoint: Checkpoint
  private let alpha: AlphaPlane?
  private let premultiplied: Bool
  /// What makes the image upright: the planar route writes its output planes turned by it.
  private let orientation: Orientation
  /// Luma samples per chroma sample of the decoded pictures ((2, 2) for monochrome, whose
  /// neutral chroma is made here at the smallest size).
  private let subsampling: (horizontal: Int, vertical: Int)
  /// The image rows and columns the crop needs, widened by two chroma samples each way (chroma
  /// siting moves what the chroma windows read by less than one sample): tiles wholly outside
  /// are not decoded.
  private let needed: (rows: Range<Int>, columns: Range<Int>)

  /// The first picture's format (the VUI colour of the stream).
  private(set) var format: HEVCFrameFormat?
  private var strip: HEVCStrip?
  private var model = HEVCColourModel.ycbcr(.bt601, .full)
  private var lumaDepth = HEVCPaste.Depth.eightBit
  private var chromaDepth = HEVCPaste.Depth.eightBit
  private var planes: PlanesResampler?
  private var rgb: RGBRoute?

  init(
    source: HEVCTileSource, plan: HEIFDecodePlan, layout: HEVCTileDecoder.Layout, checkpoint: Checkpoint,
    alpha: AlphaPlane?, premultiplied: Bool, orientation: Orientation
  ) {
    self.source = source
    self.orientation = orientation
    self.plan = plan
    self.layout = layout
    self.checkpoint = checkpoint
    self.alpha = alpha
    self.premultiplied = premultiplied
    subsampling = source.chromaFormat.subsampling ?? (2, 2)
    let crop = layout.geometry.crop
    let (mx, my) = (2 * subsampling.horizontal, 2 * subsampling.vertical)
    needed = (
      max(0, crop.y - my)..<min(source.size.height, crop.y + crop.height + my),
      max(0, crop.x - mx)..<min(source.size.width, crop.x + crop.width + mx)
    )
  }

  /// Decodes what the crop needs and returns the output at `layout.target`: planes already
  /// turned upright by `orientation`, pixels (the RGB route) still in stored orientation.
  func decode() throws(PipelineError) -> DecodedImage.Content {
    let size = source.size
    if let alpha, (alpha.width, alpha.height) != (size.width, size.height) {
      throw .corrupt(
        "the HEIF alpha image does not have the size of the image",
        detail: "alpha \(alpha.width)x\(alpha.height), image \(size)")
    }
    if source.rows == 1 && source.columns == 1 {
      try decodeSinglePicture()
    } else {
      try decodeGrid()
    }
    if let planes {
      guard case .ycbcr(let matrix, let range) = model else { throw .internal("planes without a matrix") }
      return .planes(try planes.finish(matrix: matrix, range: range))
    }
    if let rgb { return .pixels(try rgb.resampler.finish()) }
    throw .corrupt("the HEIF image has no picture inside its crop")
  }

  private var isComplete: Bool { planes?.isComplete ?? rgb?.resampler.isComplete ?? false }

  private func decodeGrid() throws(PipelineError) {
    for row in 0..<source.rows {
      let top = source.placement(row: row, column: 0)
      guard top.height > 0 else { break }
      guard top.y < needed.rows.upperBound, top.y + top.height > needed.rows.lowerBound else { continue }
      guard !isComplete else { break }
      for column in 0..<source.columns {
        let place = source.placement(row: row, column: column)
        guard place.width > 0, place.x < needed.columns.upperBound,
          place.x + place.width > needed.columns.lowerBound
        else { continue }
        try checkpoint.check()
        try source.decode(row: row, column: column) { frame throws(PipelineError) in
          try prepare(frame.format)
          paste(frame, rows: 0..<place.height, width: place.width, at: place.x)
        }
      }
      try feed(origin: top.y, rows: top.height)
    }
  }

  private func decodeSinglePicture() throws(PipelineError) {
    try checkpoint.check()
    let height = source.size.height
    try source.decode(row: 0, column: 0) { frame throws(PipelineError) in
      try prepare(frame.format)
      for top in stride(from: 0, to: height, by: HEVCTileDecoder.bandRows) {
        let end = min(height, top + HEVCTileDecoder.bandRows)
        guard top < needed.rows.upperBound, end > needed.rows.lowerBound else { continue }
        guard !isComplete else { return }
        try checkpoint.check()
        paste(frame, rows: top..<end, width: source.size.width, at: 0)
        try feed(origin: top, rows: end - top)
      }
    }
  }

  /// Copies rows `rows` of every plane of `frame` (`width` luma columns) into the strip's rows
  /// from 0, at image column `x`.
  private func paste(_ frame: borrowing HEVCFrame, rows: Range<Int>, width: Int, at x: Int) {
    guard let strip else { return }
    HEVCPaste.copy(frame.plane(0), rows: rows, count: width, depth: lumaDepth, to: strip.luma, atColumn: x)
    guard frame.format.chroma != .monochrome else { return }
    let (h, v) = subsampling
    let chroma = frame.plane(1)
    let chromaRows = (rows.lowerBound / v)..<min(chroma.height, (rows.upperBound + v - 1) / v)
    let count = min(chroma.width, (width + h - 1) / h)
    for (index, target) in [(1, strip.cb), (2, strip.cr)] {
      HEVCPaste.copy(
        frame.plane(index), rows: chromaRows, count: count, depth: chromaDepth, to: target, atColumn: x / h)
    }
  }

  /// Hands strip rows `0 ..< rows`, image rows `origin ..< origin + rows`, to the resampler.
  private func feed(origin: Int, rows: Int) throws(PipelineError) {
    guard rows > 0, let strip else { return }
    let range = origin..<(origin + rows)
    if let planes {
      let v = subsampling.vertical
      planes.consume(
        luma: strip.luma.rows, cb: strip.cb.rows, cr: strip.cr.rows, chromaRows: (rows + v - 1) / v,
        origin: origin, rows: range)
    } else if let rgb {
      let alphaRows = alpha.map {
        StripResampler.Rows(base: UnsafePointer($0.plane.base + origin * $0.width), rowBytes: $0.width)
      }
      strip.rgb(
        rows: rows, columns: needed.columns, model: model, alpha: alphaRows, premultiplied: premultiplied,
        into: rgb.buffer, outputRowBytes: rgb.rowBytes)
      rgb.resampler.consume(
        StripResampler.Rows(base: UnsafePointer(rgb.buffer), rowBytes: rgb.rowBytes), origin: origin,
        rows: range)
    }
  }

  /// Sets the run up from the first picture's format: the colour model (the `colr` nclx's
  /// matrix and range, else the VUI's), the 8-bit rounding, the chroma siting, the strip and
  /// the resampler. Later pictures were already checked to have the same chroma and depth.
  private func prepare(_ decoded: HEVCFrameFormat) throws(PipelineError) {
    guard format == nil else { return }
    format = decoded
    var matrixCode = decoded.colour.matrixCoefficients
    var range: YCbCrRange = decoded.colour.fullRange ? .full : .limited
    for case .nclx(_, _, let matrix, let fullRange) in plan.colour {
      matrixCode = matrix
      range = fullRange ? .full : .limited
      break
    }
    switch matrixCode {
    case 0: model = .identity(range)
    case 8: model = .ycgco(range)
    // Unspecified and the matrices with no fixed Kr/Kb (constant luminance, chromaticity-derived,
    // ICtCp) are read as BT.601, as libheif 1.15 reads them.
    default: model = .ycbcr(YCbCrMatrix(h273: matrixCode) ?? .bt601, range)
    }
    if decoded.bitDepth > 8 {
      let full = range == .full
      lumaDepth = .table(HEVCSampleScale.table(bitDepth: decoded.bitDepth, fullRange: full, chroma: false))
      chromaDepth = .table(HEVCSampleScale.table(bitDepth: decoded.bitDepth, fullRange: full, chroma: true))
    }
    let size = source.size
    let stripRows =
      source.rows == 1 && source.columns == 1 ? HEVCTileDecoder.bandRows : source.tileSize.height
    let strip = HEVCStrip(
      width: size.width, height: min(stripRows, size.height), subsampling: subsampling,
      monochrome: decoded.chroma == .monochrome)
    self.strip = strip
    let crop = layout.geometry.crop
    let target = layout.target
    guard case .ycbcr = model, alpha == nil else {
      rgb = RGBRoute(
        width: size.width, height: size.height, stripRows: strip.height,
        window: StripResampler.Window(
          x: Double(crop.x), y: Double(crop.y), width: Double(crop.width), height: Double(crop.height)),
        target: target)
      return
    }
    planes = PlanesResampler(
      lumaSize: (size.width, size.height),
      chromaSize: (strip.chromaWidth, (size.height + subsampling.vertical - 1) / subsampling.vertical),
      subsampling: subsampling, siting: Self.siting(decoded),
      crop: PlanesResampler.Crop(
        x: crop.x, y: crop.y, width: crop.width, height: crop.height),
      width: target.width, height: target.height, orientation: orientation)
  }

  /// Where the decoded chroma sits: 4:2:0 as the VUI says (HEVC's default is left: co-sited
  /// across, centred down); 4:2:2 co-sited across, as HEVC codes it; 4:4:4 has nothing to place.
  static func siting(_ format: HEVCFrameFormat) -> ChromaSiting {
    switch format.chroma {
    case .yuv420:
      return ChromaSiting(h273ChromaLocation: format.chromaLocation.rawValue - 1)
        ?? ChromaSiting(horizontal: .cosited, vertical: .centred)
    case .yuv422: return ChromaSiting(horizontal: .cosited, vertical: .centred)
    case .yuv444, .monochrome: return .centred
    }
  }
}

/// The RGB route's resampler and the RGB strip each strip of planes is converted into.
private final class RGBRoute {
  let resampler: StripResampler
  let buffer: UnsafeMutablePointer<UInt8>
  let rowBytes: Int

  init(
    width: Int, height: Int, stripRows: Int, window: StripResampler.Window, target: (width: Int, height: Int)
  ) {
    resampler = StripResampler(
      sourceWidth: width, sourceHeight: height, layout: .rgb, window: window, width: target.width,
      height: target.height)
    rowBytes = width * 3
    buffer = .allocate(capacity: rowBytes * stripRows)
    // Cleared for the same reason as `HEVCStrip`'s planes.
    buffer.initialize(repeating: 0, count: rowBytes * stripRows)
  }

  deinit { buffer.deallocate() }
}
