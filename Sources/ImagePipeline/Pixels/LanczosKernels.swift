private import PixelKernels

/// The inner loops of Lanczos-3 resampling, shared by every resampler.
///
/// Destination rows are produced in groups of `lanes` rows. The vertical pass reads each
/// destination row's window of source rows through a table of row pointers (so the rows may
/// live in a decoder's strip or in a few rows kept from the previous one) and writes the
/// group's rows contiguously; a block transpose turns them sample-major (8 lanes per sample),
/// so the horizontal pass filters all 8 rows at once with 8-lane vector arithmetic instead of
/// one pixel's 3 or 4 channels at a time; a second transpose turns its results back into rows.
///
/// Arithmetic is 16-bit fixed point, one `pmulhw` (the high half of a 16 × 16-bit product, 8
/// lanes at a time, baseline SSE2) and one add per tap: twice to three times as many samples
/// per instruction as 32-bit sums. Weights are 14-bit and sum to exactly one. Samples are
/// centred on 128 first (`(s − 128) · 256` fills a signed 16-bit lane), so the vertical pass
/// keeps 1/64 of a level and hands on 1/128 (at most ±166 levels from 128 after Lanczos
/// overshoot: ±21 248, inside Int16); the horizontal pass keeps 1/32 of a level. Each product
/// is rounded down, so each sum starts at half its tap count to cancel the bias: the result is
/// within 0.1 + 0.3 levels of exact arithmetic before its final rounding in the worst case (a
/// few hundredths typically), and a constant image stays exactly constant.
enum LanczosKernels {
  /// Destination rows per group.
  static let lanes = 8

  /// Scratch for one group (two Int16 buffers of `lanes` rows, each row `stride` samples), and
  /// the horizontal weights broadcast to whole vectors, so the horizontal pass loads each tap's
  /// weight with its product instead of spreading it over a vector every time.
  final class Scratch {
    let stride: Int
    let rows: UnsafeMutablePointer<Int16>
    let strip: UnsafeMutablePointer<Int16>
    /// `tapStride` vectors per destination column: its taps, then zeros up to an even count.
    let weights: UnsafeMutablePointer<SIMD8<Int16>>
    let tapStride: Int

    /// Scratch for rows of `inSamples` source and `outSamples` destination samples, resampled
    /// across with `horizontal`.
    init(inSamples: Int, outSamples: Int, horizontal: LanczosWeights) {
      // Row lengths rounded up to whole 16-sample vectors; the slack is never read back. One more
      // vector of lanes lets the horizontal pass read a zero-weighted tap past the last sample.
      stride = (max(inSamples, outSamples) + 15) & ~15
      let count = (stride + 16) * LanczosKernels.lanes
      rows = .allocate(capacity: count)
      strip = .allocate(capacity: count)
      rows.initialize(repeating: 0, count: count)
      strip.initialize(repeating: 0, count: count)
      tapStride = (horizontal.stride + 1) & ~1
      weights = .allocate(capacity: tapStride * horizontal.destination)
      weights.initialize(repeating: .zero, count: tapStride * horizontal.destination)
      horizontal.weights.withUnsafeBufferPointer { w in
        for x in 0..<horizontal.destination {
          for k in 0..<Int(horizontal.counts[x]) {
            weights[x * tapStride + k] = SIMD8(repeating: w[x * horizontal.stride + k])
          }
        }
      }
    }

    deinit {
      rows.deallocate()
      strip.deallocate()
      weights.deallocate()
    }
  }

  /// Destination rows `top ..< top + valid` (valid ≤ `lanes`) into `output` (tight rows):
  /// `table[i]` points at source row `tableFirst + i`, whose first `samples` bytes are read.
  /// With an `orientation` other than `.up` (one channel only) the rows land where that
  /// orientation puts them in the upright image, which saves turning the result afterwards.
  static func group(
    top: Int, valid: Int, table: UnsafePointer<UnsafePointer<UInt8>>, tableFirst: Int, samples: Int,
    channels: Int, horizontal: LanczosWeights, vertical: LanczosWeights, scratch: Scratch,
    output: UnsafeMutablePointer<UInt8>, orientation: Orientation = .up
  ) {
    precondition(orientation == .up || channels == 1, "LanczosKernels: orienting needs one channel")
    let height = vertical.destination
    let inStride = (samples + 15) & ~15
    let outRowBytes = horizontal.destination * channels
    let outStride = (outRowBytes + 15) & ~15
    let r = scratch.rows
    let t = scratch.strip
    for lane in 0..<lanes {
      // A short last group repeats its last row in the unused lanes; they are not stored.
      let y = top + min(lane, valid - 1)
      verticalPass(
        rows: table + (Int(vertical.starts[y]) - tableFirst), samples: samples, weights: vertical, y: y,
        dst: r + lane * inStride)
    }
    Transpose8.rowsToLanes(r, stride: inStride, t, count: inStride)
    if hasAVX2 {
      horizontalPassAVX2(strip: t, weights: horizontal, scratch: scratch, dst: r, channels: channels)
    } else {
      horizontalPassSSE2(strip: t, weights: horizontal, scratch: scratch, dst: r, channels: channels)
    }
    if orientation.swapsDimensions {
      storeTransposed(
        r, top: top, valid: valid, orientation: orientation, output: output, width: horizontal.destination,
        height: height)
      return
    }
    Transpose8.lanesToRows(r, t, stride: outStride, count: outStride)
    let flipY = orientation == .down || orientation == .downMirrored
    let flipX = orientation == .upMirrored || orientation == .down
    for lane in 0..<valid {
      let y = flipY ? height - 1 - (top + lane) : top + lane
      let row = output + y * outRowBytes
      narrow(t + lane * outStride, to: row, count: outRowBytes)
      if flipX {
        var mirrored = UnsafeMutableBufferPointer(start: row, count: outRowBytes)
        mirrored.reverse()
      }
    }
  }

  // The transposing orientations (5…8) of a one-channel group, straight from the horizontal
  // pass's sample-major results: the 8 lanes of stored column x are 8 neighbouring samples of
  // one upright row, so each column is one 8-byte store (lanes reversed when upright columns
  // run up the stored rows). Stored (x, y) of a W × H result lands on upright
  // (flipY ? H − 1 − y : y, flipX ? W − 1 − x : x), as `Orienter` maps it.
  private static func storeTransposed(
    _ lanesMajor: UnsafePointer<Int16>, top: Int, valid: Int, orientation: Orientation,
    output: UnsafeMutablePointer<UInt8>, width: Int, height: Int
  ) {
    let (flipX, flipY): (Bool, Bool)
    switch orientation {
    case .right: (flipX, flipY) = (false, true)
    case .rightMirrored: (flipX, flipY) = (true, true)
    case .left: (flipX, flipY) = (true, false)
    default: (flipX, flipY) = (false, false)
    }
    let source = UnsafeRawPointer(lanesMajor)
    for x in 0..<width {
      let b = SIMD8<UInt8>(
        truncatingIfNeeded: source.loadUnaligned(fromByteOffset: x * 16, as: SIMD8<Int16>.self))
      let row = output + (flipX ? width - 1 - x : x) * height
      if valid == lanes {
        if flipY {
          UnsafeMutableRawPointer(row + height - top - lanes).storeBytes(
            of: SIMD8(b[7], b[6], b[5], b[4], b[3], b[2], b[1], b[0]), as: SIMD8<UInt8>.self)
        } else {
          UnsafeMutableRawPointer(row + top).storeBytes(of: b, as: SIMD8<UInt8>.self)
        }
      } else {
        for lane in 0..<valid { row[flipY ? height - 1 - top - lane : top + lane] = b[lane] }
      }
    }
  }

  /// Whether the AVX2 kernels can run here: `PixelKernels_verticalAVX2` computes what
  /// `verticalPassSSE2` does, bit for bit, 16 samples per instruction instead of 8 (−40 % of the
  /// pass on a 12 MP photo), and `PixelKernels_horizontalAVX2` what `horizontalPassSSE2` does,
  /// two destination pixels per instruction instead of one.
  static let hasAVX2 = PixelKernels_hasAVX2() == 1

  // Destination row y: the weighted sum of its window of source rows, 32 samples at a time with
  // the sums kept in registers across all taps. The 16 bytes of a load, read as 8 UInt16 lanes,
  // give the even samples by a shift and the odd ones by a mask, each already in the high byte
  // (no unpacking); the sums are interleaved back once per row. Then 16 at a time and a scalar
  // tail with the same arithmetic (the high half of the product is an arithmetic shift by 16).
  // Not inlined into `group`, for the same reason as the horizontal passes.
  @inline(never)
  private static func verticalPass(
    rows: UnsafePointer<UnsafePointer<UInt8>>, samples: Int, weights: LanczosWeights, y: Int,
    dst: UnsafeMutablePointer<Int16>
  ) {
    if hasAVX2 {
      verticalPassAVX2(rows: rows, samples: samples, weights: weights, y: y, dst: dst)
    } else {
      verticalPassSSE2(rows: rows, samples: samples, weights: weights, y: y, dst: dst)
    }
  }

  /// The vertical pass for one destination row `y` in AVX2 (C); only where `hasAVX2`.
  static func verticalPassAVX2(
    rows: UnsafePointer<UnsafePointer<UInt8>>, samples: Int, weights: LanczosWeights, y: Int,
    dst: UnsafeMutablePointer<Int16>
  ) {
    precondition(hasAVX2, "LanczosKernels: no AVX2 here")
    weights.weights.withUnsafeBufferPointer { w in
      PixelKernels_verticalAVX2(
        UnsafeRawPointer(rows).assumingMemoryBound(to: UnsafePointer<UInt8>?.self), weights.counts[y],
        w.baseAddress! + y * weights.stride, samples, dst)
    }
  }

  /// The vertical pass for one destination row `y` in baseline (SSE2) vectors.
  static func verticalPassSSE2(
    rows: UnsafePointer<UnsafePointer<UInt8>>, samples: Int, weights: LanczosWeights, y: Int,
    dst: UnsafeMutablePointer<Int16>
  ) {
    let taps = Int(weights.counts[y])
    let base = y * weights.stride
    let out = UnsafeMutableRawPointer(dst)
    let bias = V(repeating: Int16(taps / 2))
    weights.weights.withUnsafeBufferPointer { w in
      let w = w.baseAddress! + base
      var i = 0
      while i + 32 <= samples {
        var (e0, o0, e1, o1) = (bias, bias, bias, bias)
        for k in 0..<taps {
          let p = UnsafeRawPointer(rows[k] + i)
          let wk = V(repeating: w[k])
          let a = centred(p.loadUnaligned(as: SIMD16<UInt8>.self))
          let b = centred(p.loadUnaligned(fromByteOffset: 16, as: SIMD16<UInt8>.self))
          e0 &+= high(V(truncatingIfNeeded: a &<< 8), wk)
          o0 &+= high(V(truncatingIfNeeded: a & 0xFF00), wk)
          e1 &+= high(V(truncatingIfNeeded: b &<< 8), wk)
          o1 &+= high(V(truncatingIfNeeded: b & 0xFF00), wk)
        }
        out.storeBytes(of: low16(e0, o0) &<< 1, toByteOffset: i * 2, as: V.self)
        out.storeBytes(of: high16(e0, o0) &<< 1, toByteOffset: i * 2 + 16, as: V.self)
        out.storeBytes(of: low16(e1, o1) &<< 1, toByteOffset: i * 2 + 32, as: V.self)
        out.storeBytes(of: high16(e1, o1) &<< 1, toByteOffset: i * 2 + 48, as: V.self)
        i += 32
      }
      if i + 16 <= samples {
        var (e0, o0) = (bias, bias)
        for k in 0..<taps {
          let wk = V(repeating: w[k])
          let a = centred(UnsafeRawPointer(rows[k] + i).loadUnaligned(as: SIMD16<UInt8>.self))
          e0 &+= high(V(truncatingIfNeeded: a &<< 8), wk)
          o0 &+= high(V(truncatingIfNeeded: a & 0xFF00), wk)
        }
        out.storeBytes(of: low16(e0, o0) &<< 1, toByteOffset: i * 2, as: V.self)
        out.storeBytes(of: high16(e0, o0) &<< 1, toByteOffset: i * 2 + 16, as: V.self)
        i += 16
      }
      while i < samples {
        var acc = Int32(taps / 2)
        for k in 0..<taps { acc &+= ((Int32(rows[k][i]) &- 128) &<< 8 &* Int32(w[k])) &>> 16 }
        dst[i] = Int16(truncatingIfNeeded: acc &<< 1)
        i += 1
      }
    }
  }

  private typealias V = SIMD8<Int16>

  // 16 samples minus 128, as 8 UInt16 lanes of two samples each (even sample in the low byte).
  @inline(__always)
  private static func centred(_ bytes: SIMD16<UInt8>) -> SIMD8<UInt16> {
    unsafeBitCast(bytes ^ 0x80, to: SIMD8<UInt16>.self)
  }

  // The high 16 bits of each lane's 32-bit product (`pmulhw`).
  @inline(__always)
  private static func high(_ a: V, _ b: V) -> V {
    V(truncatingIfNeeded: (SIMD8<Int32>(truncatingIfNeeded: a) &* SIMD8<Int32>(truncatingIfNeeded: b)) &>> 16)
  }

  @inline(__always) private static func low16(_ a: V, _ b: V) -> V {
    V(a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3])
  }
  @inline(__always) private static func high16(_ a: V, _ b: V) -> V {
    V(a[4], b[4], a[5], b[5], a[6], b[6], a[7], b[7])
  }

  // One function per channel count: inlined all together into `group`, the optimiser left some
  // SIMD conversions as generic calls (+0.3 % of an HEIC's instructions).
  @inline(never)
  private static func horizontalPass1(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, scratch: Scratch, dst: UnsafeMutablePointer<Int16>
  ) {
    horizontalPass(strip: strip, weights: weights, scratch: scratch, dst: dst, channels: 1)
  }

  @inline(never)
  private static func horizontalPass3(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, scratch: Scratch, dst: UnsafeMutablePointer<Int16>
  ) {
    horizontalPass(strip: strip, weights: weights, scratch: scratch, dst: dst, channels: 3)
  }

  @inline(never)
  private static func horizontalPass4(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, scratch: Scratch, dst: UnsafeMutablePointer<Int16>
  ) {
    horizontalPass(strip: strip, weights: weights, scratch: scratch, dst: dst, channels: 4)
  }

  /// The horizontal pass of one group in AVX2 (C), two destination pixels at a time; only where
  /// `hasAVX2`. `strip` holds the group sample-major, as `group` leaves it in `scratch.strip`.
  static func horizontalPassAVX2(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, scratch: Scratch, dst: UnsafeMutablePointer<Int16>,
    channels: Int
  ) {
    precondition(hasAVX2, "LanczosKernels: no AVX2 here")
    weights.starts.withUnsafeBufferPointer { starts in
      weights.counts.withUnsafeBufferPointer { counts in
        PixelKernels_horizontalAVX2(
          strip, scratch.stride + 16, starts.baseAddress!, counts.baseAddress!, weights.destination,
          UnsafeRawPointer(scratch.weights).assumingMemoryBound(to: Int16.self), scratch.tapStride,
          Int32(channels), dst)
      }
    }
  }

  /// The horizontal pass of one group in baseline (SSE2) vectors.
  static func horizontalPassSSE2(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, scratch: Scratch, dst: UnsafeMutablePointer<Int16>,
    channels: Int
  ) {
    switch channels {
    case 1: horizontalPass1(strip: strip, weights: weights, scratch: scratch, dst: dst)
    case 3: horizontalPass3(strip: strip, weights: weights, scratch: scratch, dst: dst)
    default: horizontalPass4(strip: strip, weights: weights, scratch: scratch, dst: dst)
    }
  }

  // All rows of a group at once: for each destination pixel and channel, the weighted sum of its
  // window of sample-major values, 8 rows per vector, two taps per step (an odd count ends on a
  // zero weight), rounded and clamped to 0…255 and stored sample-major. `channels` is a
  // constant at each call site, so its branches fold away.
  @inline(__always)
  private static func horizontalPass(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, scratch: Scratch, dst: UnsafeMutablePointer<Int16>,
    channels: Int
  ) {
    let raw = UnsafeRawPointer(strip)
    let out = UnsafeMutableRawPointer(dst)
    let pixelStride = channels * lanes * 2
    let tapStride = scratch.tapStride
    weights.starts.withUnsafeBufferPointer { starts in
      weights.counts.withUnsafeBufferPointer { counts in
        for x in 0..<weights.destination {
          let taps = Int(counts[x])
          // Half a level (16 of 1/32) for the rounding, half a unit per tap for the bias.
          let bias = V(repeating: Int16(16 + taps / 2))
          var (a0, a1, a2, a3) = (bias, bias, bias, bias)
          var p = raw + Int(starts[x]) * pixelStride
          var w = scratch.weights + x * tapStride
          for _ in 0..<((taps + 1) / 2) {
            let (w0, w1) = (w[0], w[1])
            a0 &+= high(p.loadUnaligned(as: V.self), w0)
            a0 &+= high(p.loadUnaligned(fromByteOffset: pixelStride, as: V.self), w1)
            if channels > 1 {
              a1 &+= high(p.loadUnaligned(fromByteOffset: 16, as: V.self), w0)
              a1 &+= high(p.loadUnaligned(fromByteOffset: pixelStride + 16, as: V.self), w1)
              a2 &+= high(p.loadUnaligned(fromByteOffset: 32, as: V.self), w0)
              a2 &+= high(p.loadUnaligned(fromByteOffset: pixelStride + 32, as: V.self), w1)
            }
            if channels > 3 {
              a3 &+= high(p.loadUnaligned(fromByteOffset: 48, as: V.self), w0)
              a3 &+= high(p.loadUnaligned(fromByteOffset: pixelStride + 48, as: V.self), w1)
            }
            p += 2 * pixelStride
            w += 2
          }
          let o = out + x * pixelStride
          o.storeBytes(of: byte(a0), as: V.self)
          if channels > 1 {
            o.storeBytes(of: byte(a1), toByteOffset: 16, as: V.self)
            o.storeBytes(of: byte(a2), toByteOffset: 32, as: V.self)
          }
          if channels > 3 { o.storeBytes(of: byte(a3), toByteOffset: 48, as: V.self) }
        }
      }
    }
  }

  // From 1/32 of a level around 128 (rounding already added) to 0…255.
  @inline(__always)
  private static func byte(_ sums: V) -> V {
    ((sums &>> 5) &+ 128).clampedToByte
  }

  // One finished row: 16-bit values already in 0…255 to bytes.
  @inline(__always)
  private static func narrow(_ src: UnsafePointer<Int16>, to dst: UnsafeMutablePointer<UInt8>, count: Int) {
    let s = UnsafeRawPointer(src)
    let d = UnsafeMutableRawPointer(dst)
    var i = 0
    while i + 16 <= count {
      let v = s.loadUnaligned(fromByteOffset: i * 2, as: SIMD16<Int16>.self)
      d.storeBytes(of: SIMD16<UInt8>(truncatingIfNeeded: v), toByteOffset: i, as: SIMD16<UInt8>.self)
      i += 16
    }
    while i < count {
      dst[i] = UInt8(truncatingIfNeeded: src[i])
      i += 1
    }
  }
}
