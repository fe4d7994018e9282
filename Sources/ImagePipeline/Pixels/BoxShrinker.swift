import ImageCodecs

/// Integer box shrinking, the cheap first step of large reductions: each output pixel is the
/// rounded mean of a `factorX` × `factorY` block (fewer at the right and bottom edges when the
/// size is not a multiple). libvips' `vips_resize` does the same before its Lanczos pass,
/// shrinking by round(scale / 2) so that the filter still reduces by about 2 and quality holds.
enum BoxShrinker {
  /// The largest factor used; beyond it the Lanczos pass takes the rest (16 × 16 × 255 fits 16 bits).
  static let maxFactor = 16

  /// The box factor for reducing `source` samples to `destination` along one axis: round(scale / 2),
  /// at least 1 and at most `maxFactor` (1 for scales under 3).
  static func factor(source: Int, destination: Int) -> Int {
    let half = Double(source) / Double(destination) / 2
    return min(maxFactor, max(1, Int(half.rounded())))
  }

  /// `image` shrunk by `factorX` × `factorY` to ⌈width / factorX⌉ × ⌈height / factorY⌉ (tight rows).
  static func shrink(_ image: PixelBuffer, factorX: Int, factorY: Int) -> PixelBuffer {
    precondition((1...maxFactor).contains(factorX) && (1...maxFactor).contains(factorY))
    let channels = image.layout.channels
    let width = (image.width + factorX - 1) / factorX
    let height = (image.height + factorY - 1) / factorY
    let rowSamples = image.width * channels
    let outRowBytes = width * channels
    let count = outRowBytes * height
    var sums = [UInt16](repeating: 0, count: rowSamples)
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
      image.bytes.withUnsafeBufferPointer { src in
        sums.withUnsafeMutableBufferPointer { sums in
          guard let source = src.baseAddress, let dst = out.baseAddress, let sum = sums.baseAddress else {
            return
          }
          for y in 0..<height {
            let top = y * factorY
            let rows = min(factorY, image.height - top)
            for row in 0..<rows {
              add(source + (top + row) * image.rowBytes, to: sum, count: rowSamples, first: row == 0)
            }
            emit(
              sum, rows: rows, columns: image.width, factorX: factorX, channels: channels,
              to: dst + y * outRowBytes)
          }
        }
      }
      initialized = count
    }
    return PixelBuffer(
      width: width, height: height, layout: image.layout, bytes: bytes, premultiplied: image.premultiplied)
  }

  /// Adds one source row to the column sums of its band (`first`: the band's first row, which
  /// replaces the sums). A band is at most 16 rows of 255, so 16 bits suffice and the
  /// accumulation runs 8 samples per SSE2 instruction.
  @inline(__always)
  static func add(_ line: UnsafePointer<UInt8>, to sum: UnsafeMutablePointer<UInt16>, count: Int, first: Bool)
  {
    if first {
      for i in 0..<count { sum[i] = UInt16(line[i]) }
    } else {
      for i in 0..<count { sum[i] &+= UInt16(line[i]) }
    }
  }

  /// One output row from the column sums of a band of `rows` rows: each pixel the rounded mean
  /// of its `factorX` columns (fewer at the right edge) of `columns` source pixels.
  static func emit(
    _ sum: UnsafePointer<UInt16>, rows: Int, columns: Int, factorX: Int, channels: Int,
    to o: UnsafeMutablePointer<UInt8>
  ) {
    let width = (columns + factorX - 1) / factorX
    // Every pixel but a partial one at the right edge has the same count, so its reciprocal is
    // worked out once per row, not once per pixel (a 64-bit division per pixel was most of the
    // box stage's time on a 48 MP photo).
    let whole = columns / factorX
    emit(sum, pixels: 0..<whole, span: factorX, rows: rows, factorX: factorX, channels: channels, to: o)
    if whole < width {
      emit(
        sum, pixels: whole..<width, span: columns - whole * factorX, rows: rows, factorX: factorX,
        channels: channels, to: o)
    }
  }

  // Pixels `pixels` of the row, each the mean of `span` columns of `rows` rows.
  @inline(__always)
  private static func emit(
    _ sum: UnsafePointer<UInt16>, pixels: Range<Int>, span: Int, rows: Int, factorX: Int, channels: Int,
    to o: UnsafeMutablePointer<UInt8>
  ) {
    let n = UInt64(span &* rows)
    var pixels = pixels
    // The common case, a plane shrunk by 2 or 4 whole blocks (n a power of two): 8 pixels at a
    // time, pairs of columns summed with even/odd lane shuffles and the mean taken by a shift.
    // As scalar code (a 64-bit multiply per sample) this was 10 % of a 48 MP HEIC's process.
    if channels == 1, span == factorX, span == 2 || span == 4, n & (n - 1) == 0 {
      let shift = UInt16(n.trailingZeroBitCount)
      let half = SIMD8<UInt16>(repeating: UInt16(n / 2))
      let source = UnsafeRawPointer(sum)
      var x = pixels.lowerBound
      while x + 8 <= pixels.upperBound {
        let at = x &* span &* 2
        var pairs = source.loadUnaligned(fromByteOffset: at, as: SIMD16<UInt16>.self)
        var totals = pairs.evenHalf &+ pairs.oddHalf
        if span == 4 {
          pairs = SIMD16(lowHalf: totals, highHalf: totals)
          let next = source.loadUnaligned(fromByteOffset: at + 32, as: SIMD16<UInt16>.self)
          pairs.highHalf = next.evenHalf &+ next.oddHalf
          totals = pairs.evenHalf &+ pairs.oddHalf
        }
        UnsafeMutableRawPointer(o + x).storeBytes(
          of: SIMD8<UInt8>(truncatingIfNeeded: (totals &+ half) &>> shift), as: SIMD8<UInt8>.self)
        x += 8
      }
      pixels = x..<pixels.upperBound
    }
    // (total + n/2) / n by a multiply and shift: exact for every n ≤ 256 and
    // total ≤ 256 × 255 (checked exhaustively); a division per sample costs more than
    // the rest of the shrink.
    let reciprocal = ((1 << 32) + n - 1) / n
    for x in pixels {
      let left = x &* factorX
      for c in 0..<channels {
        var total: UInt64 = n / 2
        var p = sum + (left &* channels &+ c)
        for _ in 0..<span {
          total &+= UInt64(p.pointee)
          p += channels
        }
        o[x &* channels &+ c] = UInt8(truncatingIfNeeded: (total &* reciprocal) &>> 32)
      }
    }
  }
}
