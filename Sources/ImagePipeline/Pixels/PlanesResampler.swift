import ImageCodecs

/// Resamples Y′CbCr planes that arrive in strips (or whole) to the output's planes: the luma
/// to the output size, each chroma plane straight to the output's chroma size
/// (`YCbCrPlanes.chromaSize`), centred as JPEG wants it, whatever its stored subsampling and
/// siting. A crop window (HEIF `clap`, a grid's padding) is given in luma pixels; cropped-away
/// rows and columns are never read.
///
/// Chroma is registered by its extent: the luma window `[x, x + w)` is, in chroma samples,
/// `[x / h + o, (x + w) / h + o)` with `h` the subsampling and `o` the siting offset
/// (`ChromaSiting.Position.offset`), so an odd side's overhanging last sample, an odd crop
/// edge and co-sited chroma all land where they belong against the luma.
final class PlanesResampler {
  /// A crop in luma pixels.
  struct Crop: Equatable, Sendable {
    var x: Int
    var y: Int
    var width: Int
    var height: Int
  }

  let subsampling: (horizontal: Int, vertical: Int)
  let luma: StripResampler
  let cb: StripResampler
  let cr: StripResampler
  /// Output size, in the source's orientation.
  let width: Int
  let height: Int
  /// How the output planes are turned as they are written: `finish` returns them upright.
  let orientation: Orientation

  /// Luma rows the crop reads: a tile decoder may skip tile rows entirely outside them.
  var lumaRows: Range<Int> { luma.rows }

  /// The luma rows and columns a strip must hold for the crop: the luma window's, widened to
  /// cover the chroma samples the chroma windows read (a co-sited or fractional chroma edge can
  /// reach a sample past the luma crop). A tile decoder skips tiles entirely outside them.
  var neededLuma: (rows: Range<Int>, columns: Range<Int>) {
    let (h, v) = subsampling
    let rows =
      min(luma.rows.lowerBound, cb.rows.lowerBound * v)..<max(luma.rows.upperBound, cb.rows.upperBound * v)
    let columns =
      min(
        luma.columns.lowerBound, cb.columns.lowerBound * h)..<max(
        luma.columns.upperBound, cb.columns.upperBound * h)
    return (rows, columns)
  }

  /// Whether every output row of every plane has been produced (later strips are not needed).
  var isComplete: Bool { luma.isComplete && cb.isComplete && cr.isComplete }

  /// A resampler for planes of `lumaSize` whose chroma planes are `chromaSize` (they may be
  /// padded beyond the luma's extent), subsampled and sited as given, to `width` × `height`,
  /// then turned upright by `orientation` as the rows are written (no orienting pass after).
  init(
    lumaSize: (width: Int, height: Int), chromaSize: (width: Int, height: Int),
    subsampling: (horizontal: Int, vertical: Int), siting: ChromaSiting, crop: Crop? = nil, width: Int,
    height: Int, orientation: Orientation = .up
  ) {
    let crop = crop ?? Crop(x: 0, y: 0, width: lumaSize.width, height: lumaSize.height)
    precondition(
      crop.x >= 0 && crop.y >= 0 && crop.width > 0 && crop.height > 0 && crop.x + crop.width <= lumaSize.width
        && crop.y + crop.height <= lumaSize.height, "PlanesResampler: crop outside the image")
    self.subsampling = subsampling
    self.width = width
    self.height = height
    self.orientation = orientation
    luma = StripResampler(
      sourceWidth: lumaSize.width, sourceHeight: lumaSize.height, layout: .gray,
      window: StripResampler.Window(
        x: Double(crop.x), y: Double(crop.y), width: Double(crop.width), height: Double(crop.height)),
      width: width, height: height, orientation: orientation)
    let (h, v) = (Double(subsampling.horizontal), Double(subsampling.vertical))
    let window = StripResampler.Window(
      x: Double(crop.x) / h + siting.horizontal.offset(factor: subsampling.horizontal),
      y: Double(crop.y) / v + siting.vertical.offset(factor: subsampling.vertical),
      width: Double(crop.width) / h, height: Double(crop.height) / v)
    let chroma = YCbCrPlanes.chromaSize(width: width, height: height)
    // Each chroma side is the matching luma side's half (even) or all of it (odd), so the
    // chroma planes turn with the luma.
    cb = StripResampler(
      sourceWidth: chromaSize.width, sourceHeight: chromaSize.height, layout: .gray, window: window,
      width: chroma.width, height: chroma.height, orientation: orientation)
    cr = StripResampler(
      sourceWidth: chromaSize.width, sourceHeight: chromaSize.height, layout: .gray, window: window,
      width: chroma.width, height: chroma.height, orientation: orientation)
  }

  /// One strip: rows `rows` of `planes`, whose luma row 0 is image row `origin` and whose
  /// chroma row 0 is chroma row `origin / vertical` (both multiples of the vertical subsampling,
  /// except that the image's last strip may end on an odd row).
  struct Strip {
    var planes: YCbCrPlanes
    var origin: Int
    var rows: Range<Int>

    /// A strip that is all of `planes`, from image row `lumaRow`.
    init(_ planes: YCbCrPlanes, at lumaRow: Int) {
      self.init(planes, origin: lumaRow, rows: lumaRow..<(lumaRow + planes.height))
    }

    /// Rows `rows` of `planes`, read in place.
    init(_ planes: YCbCrPlanes, origin: Int, rows: Range<Int>) {
      self.planes = planes
      self.origin = origin
      self.rows = rows
    }
  }

  /// Takes one strip (luma, then the chroma rows it covers).
  func consume(_ strip: Strip) {
    let v = subsampling.vertical
    precondition(
      strip.origin % v == 0 && strip.rows.lowerBound % v == 0, "PlanesResampler: strip inside a chroma row")
    luma.consume(strip.planes.luma, origin: strip.origin, rows: strip.rows)
    let origin = strip.origin / v
    let chroma =
      (strip.rows.lowerBound / v)..<min(origin + strip.planes.cb.height, (strip.rows.upperBound + v - 1) / v)
    cb.consume(strip.planes.cb, origin: origin, rows: chroma)
    cr.consume(strip.planes.cr, origin: origin, rows: chroma)
  }

  /// Takes rows `rows` of a strip held in memory the caller owns (a tile decoder's strip
  /// buffers): luma row `r` at `luma.base + (r − origin) × luma.rowBytes`, chroma row `c` at
  /// `cb.base + (c − origin / vertical) × cb.rowBytes` (and the same for Cr), with
  /// `chromaRows` chroma rows in the strip. The same rules as `consume(_:)` for where strips
  /// start.
  func consume(
    luma lumaRows: StripResampler.Rows, cb cbRows: StripResampler.Rows, cr crRows: StripResampler.Rows,
    chromaRows: Int, origin: Int, rows: Range<Int>
  ) {
    let v = subsampling.vertical
    precondition(origin % v == 0 && rows.lowerBound % v == 0, "PlanesResampler: strip inside a chroma row")
    luma.consume(lumaRows, origin: origin, rows: rows)
    let chromaOrigin = origin / v
    let chroma = (rows.lowerBound / v)..<min(chromaOrigin + chromaRows, (rows.upperBound + v - 1) / v)
    cb.consume(cbRows, origin: chromaOrigin, rows: chroma)
    cr.consume(crRows, origin: chromaOrigin, rows: chroma)
  }

  /// Takes a strip that is all of `planes`, from image row `lumaRow`.
  func consume(_ planes: YCbCrPlanes, at lumaRow: Int) {
    consume(Strip(planes, at: lumaRow))
  }

  /// Takes strips from `next` until it returns nil, checking `checkpoint` before asking for
  /// each: a cancelled or overdue run stops between strips. A tile decoder's loop: `next`
  /// decodes one row of tiles.
  func consume(
    checkpoint: Checkpoint, strips next: () throws(PipelineError) -> Strip?
  ) throws(PipelineError) {
    while true {
      try checkpoint.check()
      guard let strip = try next() else { return }
      consume(strip)
    }
  }

  /// The output planes, upright by `orientation`, with chroma centred at the output's
  /// subsampling; `corrupt` when rows never arrived.
  func finish(matrix: YCbCrMatrix, range: YCbCrRange) throws(PipelineError) -> YCbCrPlanes {
    let upright = orientation.displaySize(width: width, height: height)
    return YCbCrPlanes(
      luma: try luma.finish(), cb: try cb.finish(), cr: try cr.finish(),
      subsampling: YCbCrPlanes.subsampling(width: upright.width, height: upright.height), matrix: matrix,
      range: range, siting: .centred)
  }

  /// Whole `planes` (with an optional crop) at `width` × `height`, fed in bands of
  /// `bandRows` luma rows so that `checkpoint` is checked every few milliseconds. Planes that
  /// already have their output size and extent, centred and uncropped, are kept as they are.
  static func resize(
    _ planes: YCbCrPlanes, crop: Crop? = nil, width: Int, height: Int, checkpoint: Checkpoint = .never,
    bandRows: Int = 512
  ) throws(PipelineError) -> YCbCrPlanes {
    let chroma = YCbCrPlanes.chromaSize(width: width, height: height)
    let whole = crop == nil || crop == Crop(x: 0, y: 0, width: planes.width, height: planes.height)
    let untouched = whole && planes.siting == .centred
    let lumaDone = untouched && (planes.width, planes.height) == (width, height)
    // A plane of the right count whose last sample overhangs still needs remapping.
    let chromaDone =
      untouched && (planes.cb.width, planes.cb.height) == chroma
      && planes.chromaExtent == (Double(chroma.width), Double(chroma.height))
    if lumaDone && chromaDone { return planes }
    let resampler = PlanesResampler(
      lumaSize: (planes.width, planes.height), chromaSize: (planes.cb.width, planes.cb.height),
      subsampling: planes.subsampling, siting: planes.siting, crop: crop, width: width, height: height)
    var result = planes
    if lumaDone || chromaDone {
      // Only one kind of plane changes: the other is not touched at all.
      if !lumaDone {
        try resampler.luma.consume(planes.luma, bandRows: bandRows, checkpoint: checkpoint)
        result.luma = try resampler.luma.finish()
      } else {
        let chromaBand = max(1, bandRows / planes.subsampling.vertical)
        try resampler.cb.consume(planes.cb, bandRows: chromaBand, checkpoint: checkpoint)
        try resampler.cr.consume(planes.cr, bandRows: chromaBand, checkpoint: checkpoint)
        result.cb = try resampler.cb.finish()
        result.cr = try resampler.cr.finish()
      }
    } else {
      let v = planes.subsampling.vertical
      let step = max(v, bandRows - bandRows % v)
      var top = 0
      try resampler.consume(checkpoint: checkpoint) { () -> Strip? in
        guard top < planes.height else { return nil }
        defer { top += step }
        return Strip(planes, origin: 0, rows: top..<min(planes.height, top + step))
      }
      result = try resampler.finish(matrix: planes.matrix, range: planes.range)
    }
    result.subsampling = YCbCrPlanes.subsampling(width: width, height: height)
    result.siting = .centred
    return result
  }
}
