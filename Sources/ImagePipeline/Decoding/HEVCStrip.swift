import ImageCodecs

/// One strip of 8-bit Y′CbCr rows as wide as the image: what a row of HEVC tiles is pasted into
/// before it is resampled. Owned here and reused from one tile row to the next, so a decode
/// allocates it once; rows are padded to whole 32-byte vectors.
final class HEVCStrip {
  /// Samples per luma row and luma rows the strip holds at most.
  let width: Int
  let height: Int
  /// Luma samples per chroma sample across and down (1 or 2; (1, 1) for monochrome).
  let subsampling: (horizontal: Int, vertical: Int)
  let chromaWidth: Int
  let chromaHeight: Int
  let luma: Plane
  let cb: Plane
  let cr: Plane

  /// One plane of the strip.
  struct Plane {
    let base: UnsafeMutablePointer<UInt8>
    let rowBytes: Int

    /// Row `y` of the plane.
    func row(_ y: Int) -> UnsafeMutablePointer<UInt8> { base + y * rowBytes }

    /// The plane as the resampler reads it.
    var rows: StripResampler.Rows { StripResampler.Rows(base: UnsafePointer(base), rowBytes: rowBytes) }
  }

  /// A strip of `width` × `height` luma samples with chroma subsampled by `subsampling` (rounded
  /// up, as HEVC codes odd sides). Monochrome pictures get chroma planes of neutral 128, so that
  /// they go through the same planar path as colour ones.
  init(width: Int, height: Int, subsampling: (horizontal: Int, vertical: Int), monochrome: Bool) {
    precondition(width > 0 && height > 0, "HEVCStrip: empty")
    self.width = width
    self.height = height
    self.subsampling = subsampling
    chromaWidth = (width + subsampling.horizontal - 1) / subsampling.horizontal
    chromaHeight = (height + subsampling.vertical - 1) / subsampling.vertical
    luma = Self.plane(width: width, height: height)
    cb = Self.plane(width: chromaWidth, height: chromaHeight)
    cr = Self.plane(width: chromaWidth, height: chromaHeight)
    // Every sample the resampler reads is pasted first, but the planes are still cleared once:
    // should a sample ever be read unpasted, it is black, never what an earlier upload left in
    // reused heap memory (a few hundred microseconds per decode; the pages are touched anyway).
    // The chroma of a monochrome picture is never pasted: neutral 128.
    luma.base.initialize(repeating: 0, count: luma.rowBytes * height)
    for plane in [cb, cr] {
      plane.base.initialize(repeating: monochrome ? 128 : 0, count: plane.rowBytes * chromaHeight)
    }
  }

  deinit {
    luma.base.deallocate()
    cb.base.deallocate()
    cr.base.deallocate()
  }

  private static func plane(width: Int, height: Int) -> Plane {
    let rowBytes = (width + 31) & ~31
    return Plane(base: .allocate(capacity: rowBytes * height), rowBytes: rowBytes)
  }

  /// Bytes a strip of this shape holds (for the memory estimate).
  static func bytes(width: Int, height: Int, subsampling: (horizontal: Int, vertical: Int)) -> Int {
    let chromaWidth = (width + subsampling.horizontal - 1) / subsampling.horizontal
    let chromaHeight = (height + subsampling.vertical - 1) / subsampling.vertical
    return ((width + 31) & ~31) * height + 2 * ((chromaWidth + 31) & ~31) * chromaHeight
  }
}

/// Copies decoded samples into 8-bit rows: 8-bit ones as they are, deeper ones rounded to 8 bits
/// as `HEVCSampleScale` says — the one copy a sample makes between libavcodec and the resampler.
enum HEVCPaste {
  /// How one plane's samples become bytes.
  enum Depth {
    case eightBit
    /// Samples deeper than 8 bits through a table indexed by the sample value (its last entry
    /// taken for values beyond it, which a conforming stream never has).
    case table([UInt8])
  }

  /// Copies `count` samples of rows `rows` of `plane`, from column `column`, to `destination`
  /// (row `rows.lowerBound` of the plane lands on `destination`'s row 0).
  static func copy(
    _ plane: HEVCPlane, rows: Range<Int>, column: Int = 0, count: Int, depth: Depth,
    to destination: HEVCStrip.Plane, atRow firstRow: Int = 0, atColumn x: Int
  ) {
    precondition(column >= 0 && count >= 0 && column + count <= plane.width, "HEVCPaste: columns")
    precondition(rows.lowerBound >= 0 && rows.upperBound <= plane.height, "HEVCPaste: rows")
    guard count > 0 else { return }
    switch depth {
    case .eightBit:
      precondition(plane.bytesPerSample == 1, "HEVCPaste: not 8-bit")
      for (index, y) in rows.enumerated() {
        let source = plane.baseAddress + y * plane.rowBytes + column
        (destination.row(firstRow + index) + x).update(
          from: source.assumingMemoryBound(to: UInt8.self), count: count)
      }
    case .table(let table):
      precondition(plane.bytesPerSample == 2, "HEVCPaste: not 16-bit")
      table.withUnsafeBufferPointer { table in
        let top = table.count - 1
        for (index, y) in rows.enumerated() {
          let source = (plane.baseAddress + y * plane.rowBytes).assumingMemoryBound(to: UInt16.self) + column
          let target = destination.row(firstRow + index) + x
          for i in 0..<count { target[i] = table[min(Int(source[i]), top)] }
        }
      }
    }
  }
}
