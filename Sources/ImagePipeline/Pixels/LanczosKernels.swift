/// The inner loops of Lanczos-3 resampling, shared by every resampler.
///
/// Destination rows are produced in groups of `lanes` rows. The vertical pass reads each
/// destination row's window of source rows through a table of row pointers (so the rows may
/// live in a decoder's strip or in a few rows kept from the previous one) and writes the
/// group's rows contiguously; a block transpose turns them sample-major (8 lanes per sample),
/// so the horizontal pass filters all 8 rows at once with 8-lane vector arithmetic instead of
/// one pixel's 3 or 4 channels at a time; a second transpose turns its results back into rows.
/// Weights are 14-bit fixed point summing to exactly one; the intermediate keeps 4 fractional
/// bits and is not clamped, so only the final value is rounded.
enum LanczosKernels {
  /// Destination rows per group.
  static let lanes = 8

  // Weight bits (14) minus the 4 fractional bits the intermediate keeps.
  private static let verticalShift = Int32(LanczosWeights.bits - 4)
  // Weight bits (14) plus the intermediate's 4 fractional bits.
  private static let horizontalShift = Int32(LanczosWeights.bits + 4)

  /// Scratch for one group: two Int16 buffers of `lanes` rows, each row `stride` samples.
  final class Scratch {
    let stride: Int
    let rows: UnsafeMutablePointer<Int16>
    let strip: UnsafeMutablePointer<Int16>

    /// Scratch for rows of `inSamples` source and `outSamples` destination samples.
    init(inSamples: Int, outSamples: Int) {
      // Row lengths rounded up to whole 16-sample vectors; the slack is never read back.
      stride = (max(inSamples, outSamples) + 15) & ~15
      rows = .allocate(capacity: stride * LanczosKernels.lanes)
      strip = .allocate(capacity: stride * LanczosKernels.lanes)
      rows.initialize(repeating: 0, count: stride * LanczosKernels.lanes)
      strip.initialize(repeating: 0, count: stride * LanczosKernels.lanes)
    }

    deinit {
      rows.deallocate()
      strip.deallocate()
    }
  }

  /// Destination rows `top ..< top + valid` (valid ≤ `lanes`) into `output` (tight rows):
  /// `table[i]` points at source row `tableFirst + i`, whose first `samples` bytes are read.
  static func group(
    top: Int, valid: Int, table: UnsafePointer<UnsafePointer<UInt8>>, tableFirst: Int, samples: Int,
    channels: Int, horizontal: LanczosWeights, vertical: LanczosWeights, scratch: Scratch,
    output: UnsafeMutablePointer<UInt8>
  ) {
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
    switch channels {
    case 1: horizontalPass1(strip: t, weights: horizontal, dst: r)
    case 3: horizontalPass3(strip: t, weights: horizontal, dst: r)
    default: horizontalPass4(strip: t, weights: horizontal, dst: r)
    }
    Transpose8.lanesToRows(r, t, stride: outStride, count: outStride)
    for lane in 0..<valid {
      narrow(t + lane * outStride, to: output + (top + lane) * outRowBytes, count: outRowBytes)
    }
  }

  // Destination row y: the weighted sum of its window of source rows, 16 samples at a time with
  // the sums kept in registers across all taps (the UInt8 × Int16 products lower to pmaddwd even
  // on baseline x86-64), then a scalar tail. Not inlined into `group`, for the same reason as
  // the horizontal passes.
  @inline(never)
  private static func verticalPass(
    rows: UnsafePointer<UnsafePointer<UInt8>>, samples: Int, weights: LanczosWeights, y: Int,
    dst: UnsafeMutablePointer<Int16>
  ) {
    let taps = Int(weights.counts[y])
    let base = y * weights.stride
    let out = UnsafeMutableRawPointer(dst)
    let half = Int32(1) << (verticalShift - 1)
    weights.weights.withUnsafeBufferPointer { w in
      let w = w.baseAddress! + base
      var i = 0
      while i + 16 <= samples {
        var low = SIMD8<Int32>(repeating: half)
        var high = low
        for k in 0..<taps {
          let v = UnsafeRawPointer(rows[k] + i).loadUnaligned(as: SIMD16<UInt8>.self)
          let wk = SIMD8<Int32>(repeating: Int32(w[k]))
          low &+= SIMD8<Int32>(truncatingIfNeeded: v.lowHalf) &* wk
          high &+= SIMD8<Int32>(truncatingIfNeeded: v.highHalf) &* wk
        }
        let packed = SIMD16<Int16>(
          lowHalf: SIMD8<Int16>(truncatingIfNeeded: low &>> verticalShift),
          highHalf: SIMD8<Int16>(truncatingIfNeeded: high &>> verticalShift))
        out.storeBytes(of: packed, toByteOffset: i * 2, as: SIMD16<Int16>.self)
        i += 16
      }
      while i < samples {
        var acc = half
        for k in 0..<taps { acc = acc &+ Int32(w[k]) &* Int32(rows[k][i]) }
        dst[i] = Int16(truncatingIfNeeded: acc >> verticalShift)
        i += 1
      }
    }
  }

  // One function per channel count: inlined all together into `group`, the optimiser left some
  // SIMD conversions as generic calls (+0.3 % of an HEIC's instructions).
  @inline(never)
  private static func horizontalPass1(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, dst: UnsafeMutablePointer<Int16>
  ) {
    horizontalPass(strip: strip, weights: weights, dst: dst, channels: 1)
  }

  @inline(never)
  private static func horizontalPass3(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, dst: UnsafeMutablePointer<Int16>
  ) {
    horizontalPass(strip: strip, weights: weights, dst: dst, channels: 3)
  }

  @inline(never)
  private static func horizontalPass4(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, dst: UnsafeMutablePointer<Int16>
  ) {
    horizontalPass(strip: strip, weights: weights, dst: dst, channels: 4)
  }

  // All rows of a group at once: for each destination pixel and channel, the weighted sum of its
  // window of sample-major values, 8 rows per vector, rounded and clamped to 0…255 and stored
  // sample-major. `channels` is a constant at each call site, so its branches fold away.
  @inline(__always)
  private static func horizontalPass(
    strip: UnsafePointer<Int16>, weights: LanczosWeights, dst: UnsafeMutablePointer<Int16>, channels: Int
  ) {
    let half = SIMD8<Int32>(repeating: 1 << (horizontalShift - 1))
    let raw = UnsafeRawPointer(strip)
    let out = UnsafeMutableRawPointer(dst)
    let pixelStride = channels * lanes * 2
    weights.weights.withUnsafeBufferPointer { w in
      weights.starts.withUnsafeBufferPointer { starts in
        weights.counts.withUnsafeBufferPointer { counts in
          for x in 0..<weights.destination {
            var a0 = half
            var a1 = half
            var a2 = half
            var a3 = half
            var p = raw + Int(starts[x]) * pixelStride
            let base = x * weights.stride
            for k in 0..<Int(counts[x]) {
              let wk = SIMD8<Int32>(repeating: Int32(w[base + k]))
              a0 &+= SIMD8<Int32>(truncatingIfNeeded: p.loadUnaligned(as: SIMD8<Int16>.self)) &* wk
              if channels > 1 {
                a1 &+=
                  SIMD8<Int32>(truncatingIfNeeded: p.loadUnaligned(fromByteOffset: 16, as: SIMD8<Int16>.self))
                  &* wk
                a2 &+=
                  SIMD8<Int32>(truncatingIfNeeded: p.loadUnaligned(fromByteOffset: 32, as: SIMD8<Int16>.self))
                  &* wk
              }
              if channels > 3 {
                a3 &+=
                  SIMD8<Int32>(truncatingIfNeeded: p.loadUnaligned(fromByteOffset: 48, as: SIMD8<Int16>.self))
                  &* wk
              }
              p += pixelStride
            }
            let o = out + x * pixelStride
            o.storeBytes(of: clamp(a0), as: SIMD8<Int16>.self)
            if channels > 1 {
              o.storeBytes(of: clamp(a1), toByteOffset: 16, as: SIMD8<Int16>.self)
              o.storeBytes(of: clamp(a2), toByteOffset: 32, as: SIMD8<Int16>.self)
            }
            if channels > 3 { o.storeBytes(of: clamp(a3), toByteOffset: 48, as: SIMD8<Int16>.self) }
          }
        }
      }
    }
  }

  // Final rounding shift and clamp to 0…255, in 16-bit lanes (SSE2 has no 32-bit min/max). The
  // sums stay well inside Int16 after the shift.
  @inline(__always)
  private static func clamp(_ sums: SIMD8<Int32>) -> SIMD8<Int16> {
    SIMD8<Int16>(truncatingIfNeeded: sums &>> horizontalShift).clampedToByte
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
