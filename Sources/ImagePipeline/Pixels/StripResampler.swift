import ImageCodecs

/// Lanczos-3 resampling of an image that arrives in strips of rows, top to bottom.
///
/// A decoder hands over each strip as it finishes it (a JPEG's planes all at once, an HEVC
/// grid one tile row at a time) and only the few rows a later destination row still needs are
/// kept from one strip to the next, so a 200 MP photo never needs a full-size buffer: memory is
/// the output, one strip, and a few dozen rows. A window selects what is resampled (HEIF
/// `clap`, or a chroma plane's extent): rows and columns outside it are never read.
///
/// The vertical pass runs first, straight from the source rows, 8 destination rows at a time
/// (`LanczosKernels`). Reductions of 3× and more box-shrink each band of rows as it arrives
/// (`BoxShrinker`), as libvips does, and the Lanczos pass reads the shrunk rows. The arithmetic
/// does not depend on where the strips are cut: fed whole or in strips, the output is the same
/// byte for byte. Single-threaded on purpose: the service processes several images at once.
final class StripResampler {
  /// The part of the source that becomes the destination, in source samples (fractional for a
  /// chroma plane: a crop's chroma edge, or an odd side's last half sample).
  struct Window: Equatable, Sendable {
    var x: Double
    var y: Double
    var width: Double
    var height: Double

    /// The whole of a `width` × `height` source.
    static func whole(width: Int, height: Int) -> Window {
      Window(x: 0, y: 0, width: Double(width), height: Double(height))
    }
  }

  let layout: PixelBuffer.Layout
  let sourceWidth: Int
  let sourceHeight: Int
  /// Destination size, in the source's orientation.
  let width: Int
  let height: Int
  /// Where the destination is turned as it is written (`finish` returns the upright image).
  let orientation: Orientation
  /// The source rows the window reads; strips may leave out the others.
  let rows: Range<Int>
  /// The next source row `consume` expects.
  private(set) var nextRow = 0

  /// The source columns the window reads; strips need not hold the others.
  let columns: Range<Int>
  private let channels: Int
  private let factorX: Int
  private let factorY: Int
  private let horizontal: LanczosWeights
  private let vertical: LanczosWeights
  /// Samples in a row the Lanczos pass reads (after any box shrink).
  private let samples: Int
  /// For each destination row y, the first source row any row from y on still needs.
  private let neededFrom: [Int]

  // The box stage's column sums of the band being accumulated, and its row count so far.
  private let sums: UnsafeMutablePointer<UInt16>?
  private var bandRows = 0

  // Rows owned here: `heldCount` rows from Lanczos row `heldFirst`, `samples` bytes apart.
  private var held: UnsafeMutablePointer<UInt8>
  private var heldCapacity: Int
  private var heldFirst = 0
  private var heldCount = 0 {
    didSet { peakHeldRows = max(peakHeldRows, heldCount) }
  }
  /// The most rows held at once (the memory bound the tests check).
  private(set) var peakHeldRows = 0
  // The strip being consumed, when its rows are read in place (no box stage).
  private var strip: (base: UnsafePointer<UInt8>, rowBytes: Int, first: Int, end: Int)?

  /// Lanczos rows `0 ..< available` have arrived; groups from `nextGroup` are still to do.
  private var available = 0
  private var nextGroup = 0
  private var output: [UInt8]
  private let scratch: LanczosKernels.Scratch
  private let table: UnsafeMutablePointer<UnsafePointer<UInt8>>

  /// A resampler of `window` of a `sourceWidth` × `sourceHeight` source to `width` × `height`,
  /// written as `orientation` makes it upright (one-channel layouts only): each destination
  /// row is stored where it belongs, so no orienting pass or second buffer follows.
  init(
    sourceWidth: Int, sourceHeight: Int, layout: PixelBuffer.Layout, window: Window? = nil, width: Int,
    height: Int, orientation: Orientation = .up
  ) {
    precondition(sourceWidth > 0 && sourceHeight > 0 && width > 0 && height > 0, "StripResampler: empty")
    precondition(orientation == .up || layout == .gray, "StripResampler: orienting needs one channel")
    let window = window ?? .whole(width: sourceWidth, height: sourceHeight)
    precondition(window.width > 0 && window.height > 0, "StripResampler: empty window")
    self.layout = layout
    self.sourceWidth = sourceWidth
    self.sourceHeight = sourceHeight
    self.width = width
    self.height = height
    self.orientation = orientation
    channels = layout.channels
    columns = Self.span(window.x, window.width, within: sourceWidth)
    rows = Self.span(window.y, window.height, within: sourceHeight)
    factorX = BoxShrinker.factor(source: columns.count, destination: width)
    factorY = BoxShrinker.factor(source: rows.count, destination: height)
    let shrunkWidth = (columns.count + factorX - 1) / factorX
    let shrunkHeight = (rows.count + factorY - 1) / factorY
    horizontal = Self.weights(
      shrunkWidth, width, start: window.x - Double(columns.lowerBound), extent: window.width, factor: factorX)
    vertical = Self.weights(
      shrunkHeight, height, start: window.y - Double(rows.lowerBound), extent: window.height, factor: factorY)
    samples = shrunkWidth * channels
    var neededFrom = vertical.starts.map(Int.init)
    for y in stride(from: height - 2, through: 0, by: -1) {
      neededFrom[y] = min(neededFrom[y], neededFrom[y + 1])
    }
    self.neededFrom = neededFrom
    sums = factorX > 1 || factorY > 1 ? .allocate(capacity: columns.count * channels) : nil
    var widest = 1
    for top in stride(from: 0, to: height, by: LanczosKernels.lanes) {
      let span = Self.groupSpan(vertical, top: top, height: height)
      widest = max(widest, span.count)
    }
    table = .allocate(capacity: widest)
    heldCapacity = widest + 64
    held = .allocate(capacity: heldCapacity * max(1, samples))
    scratch = LanczosKernels.Scratch(inSamples: samples, outSamples: width * channels, horizontal: horizontal)
    let count = width * height * layout.channels
    // Every byte is written by the groups before `finish` hands the buffer out.
    output = [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
  }

  deinit {
    sums?.deallocate()
    held.deallocate()
    table.deallocate()
  }

  /// Whether every destination row has been produced.
  var isComplete: Bool { nextGroup >= height }

  /// Takes source rows `first ..< first + strip.height` (full source width, layout as set).
  /// Strips come in order; rows outside `rows` may be left out (a decoder need not decode
  /// them), rows inside may not. Every destination row whose window is complete is produced
  /// before this returns.
  func consume(_ strip: PixelBuffer, at first: Int) {
    consume(strip, origin: first, rows: first..<(first + strip.height))
  }

  /// Takes source rows `rows` out of `buffer`, whose row 0 is source row `origin`: a band of a
  /// larger buffer, read in place (the whole-image resize feeds its image band by band).
  func consume(_ buffer: PixelBuffer, origin: Int, rows band: Range<Int>) {
    precondition(buffer.width == sourceWidth && buffer.layout == layout, "StripResampler: strip shape")
    precondition(
      band.lowerBound >= origin && band.upperBound <= origin + buffer.height,
      "StripResampler: rows outside the buffer")
    buffer.bytes.withUnsafeBufferPointer { bytes in
      consume(Rows(base: bytes.baseAddress!, rowBytes: buffer.rowBytes), origin: origin, rows: band)
    }
  }

  /// Source rows in memory the caller owns: row `r` of a strip whose row 0 is source row
  /// `origin` starts at `base + (r − origin) × rowBytes` and holds `sourceWidth` samples of
  /// `layout` (a tile decoder's strip buffer, reused from one strip to the next).
  struct Rows {
    var base: UnsafePointer<UInt8>
    var rowBytes: Int
  }

  /// Takes source rows `band` of `rows` (whose row 0 is source row `origin`), read in place
  /// while this runs; the rows a later strip still needs are copied before it returns.
  func consume(_ rows: Rows, origin: Int, rows band: Range<Int>) {
    precondition(band.lowerBound >= origin, "StripResampler: rows outside the buffer")
    let first = band.lowerBound
    precondition(
      first >= nextRow && band.upperBound <= sourceHeight
        && max(nextRow, self.rows.lowerBound) >= min(first, self.rows.upperBound),
      "StripResampler: rows \(nextRow)..<\(first) of the window were skipped")
    nextRow = band.upperBound
    let lo = max(first, self.rows.lowerBound)
    let hi = min(band.upperBound, self.rows.upperBound)
    guard lo < hi else { return }
    // Source row r is at `base + (r - first) × rowBytes`.
    let base = rows.base + (first - origin) * rows.rowBytes + columns.lowerBound * channels
    let rowBytes = rows.rowBytes
    if let sums {
      for row in lo..<hi {
        let line = base + (row - first) * rowBytes
        BoxShrinker.add(line, to: sums, count: columns.count * channels, first: bandRows == 0)
        bandRows += 1
        guard bandRows == factorY || row == self.rows.upperBound - 1 else { continue }
        let destination = reserveHeldRow()
        BoxShrinker.emit(
          sums, rows: bandRows, columns: columns.count, factorX: factorX, channels: channels,
          to: destination)
        heldCount += 1
        available += 1
        bandRows = 0
        drain()
      }
    } else {
      let stripFirst = lo - self.rows.lowerBound
      let stripEnd = hi - self.rows.lowerBound
      self.strip = (base + (lo - first) * rowBytes, rowBytes, stripFirst, stripEnd)
      defer { self.strip = nil }
      available = stripEnd
      drain()
      // Keep what later destination rows still read; the strip itself goes back to its owner.
      let keep = isComplete ? stripEnd : neededFrom[nextGroup]
      dropHeld(before: keep)
      let from = max(keep, stripFirst)
      if from < stripEnd {
        if heldCount == 0 { heldFirst = from }
        ensureHeldCapacity(stripEnd - from)
        for row in from..<stripEnd {
          (held + heldCount * samples).update(
            from: base + (row + self.rows.lowerBound - first) * rowBytes,
            count: samples)
          heldCount += 1
        }
      }
    }
  }

  /// Takes all of `image` (the whole source) in bands of `bandRows` rows, read in place,
  /// checking `checkpoint` before each band.
  func consume(_ image: PixelBuffer, bandRows: Int, checkpoint: Checkpoint) throws(PipelineError) {
    precondition(image.height == sourceHeight && bandRows > 0, "StripResampler: not the whole source")
    for top in stride(from: 0, to: sourceHeight, by: bandRows) {
      try checkpoint.check()
      consume(image, origin: 0, rows: top..<min(sourceHeight, top + bandRows))
    }
  }

  /// The destination image, upright by `orientation`. Throws `corrupt` when rows the window reads never arrived (a
  /// decoder that ran out of tiles); shapes and order are the decoder's to get right before it
  /// hands a strip over.
  func finish() throws(PipelineError) -> PixelBuffer {
    guard isComplete else {
      throw .corrupt(
        "the image ended before all its rows were decoded", detail: "rows \(nextRow)… of \(rows)")
    }
    let bytes = output
    output = []
    let size = orientation.displaySize(width: width, height: height)
    return PixelBuffer(width: size.width, height: size.height, layout: layout, bytes: bytes)
  }

  // Produces every group of destination rows whose source rows have all arrived.
  private func drain() {
    let channels = channels
    output.withUnsafeMutableBufferPointer { out in
      while nextGroup < height {
        let span = Self.groupSpan(vertical, top: nextGroup, height: height)
        guard span.upperBound <= available else { return }
        for row in span { table[row - span.lowerBound] = pointer(to: row) }
        LanczosKernels.group(
          top: nextGroup, valid: min(LanczosKernels.lanes, height - nextGroup), table: table,
          tableFirst: span.lowerBound, samples: samples, channels: channels, horizontal: horizontal,
          vertical: vertical, scratch: scratch, output: out.baseAddress!, orientation: orientation)
        nextGroup += LanczosKernels.lanes
      }
    }
  }

  private func pointer(to row: Int) -> UnsafePointer<UInt8> {
    if let strip, row >= strip.first {
      return strip.base + (row - strip.first) * strip.rowBytes
    }
    precondition(row >= heldFirst && row < heldFirst + heldCount, "StripResampler: row \(row) not held")
    return UnsafePointer(held + (row - heldFirst) * samples)
  }

  // Space for one more held row (the box stage writes it in place).
  private func reserveHeldRow() -> UnsafeMutablePointer<UInt8> {
    if heldCount == heldCapacity { dropHeld(before: isComplete ? available : neededFrom[nextGroup]) }
    ensureHeldCapacity(1)
    return held + heldCount * samples
  }

  // Forgets held rows before `row` (as many as there are), moving the rest to the front.
  private func dropHeld(before row: Int) {
    let end = heldFirst + heldCount
    let first = min(max(row, heldFirst), end)
    guard first > heldFirst else { return }
    if first < end {
      held.update(from: held + (first - heldFirst) * samples, count: (end - first) * samples)
    }
    heldCount = end - first
    heldFirst = first
  }

  private func ensureHeldCapacity(_ more: Int) {
    guard heldCount + more > heldCapacity else { return }
    let capacity = max(heldCapacity * 2, heldCount + more)
    let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * max(1, samples))
    grown.update(from: held, count: heldCount * samples)
    held.deallocate()
    held = grown
    heldCapacity = capacity
  }

  /// The source rows the group of destination rows from `top` reads.
  private static func groupSpan(_ weights: LanczosWeights, top: Int, height: Int) -> Range<Int> {
    var first = Int.max
    var end = 0
    for y in top..<min(top + LanczosKernels.lanes, height) {
      let start = Int(weights.starts[y])
      first = min(first, start)
      end = max(end, start + Int(weights.counts[y]))
    }
    return first..<end
  }

  /// The whole samples `[start, start + extent)` touches, within `0 ..< count`.
  private static func span(_ start: Double, _ extent: Double, within count: Int) -> Range<Int> {
    let first = min(max(0, Int(start.rounded(.down))), count - 1)
    let end = min(count, max(first + 1, Int((start + extent).rounded(.up))))
    return first..<end
  }

  /// One axis's weights after a box shrink by `factor`. A window of whole samples is resampled
  /// exactly as if it had been cut out first (a partial last box then counts as a whole one, a
  /// shift of under a quarter output pixel); a fractional one (chroma) maps its exact extent.
  private static func weights(
    _ source: Int, _ destination: Int, start: Double, extent: Double, factor: Int
  ) -> LanczosWeights {
    if start == 0 && extent == extent.rounded() {
      return .cached(source: source, destination: destination)
    }
    let offset = start / Double(factor)
    let scaled = min(Double(source) - offset, extent / Double(factor))
    return .cached(source: source, destination: destination, extent: scaled, offset: offset)
  }
}
