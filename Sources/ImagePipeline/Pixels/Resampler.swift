import ImageCodecs

/// Fits images inside a bounding square and resamples them with a separable Lanczos-3 filter.
///
/// The filter runs vertically first, straight from the source rows, for a strip of 8
/// destination rows at a time; the strip is block-transposed so that the horizontal pass filters
/// its 8 rows at once in vector lanes, then transposed back. Only strip buffers (a few rows)
/// are allocated besides the output. Weights are 14-bit fixed point summing to exactly one; the
/// intermediate keeps 4 fractional bits and is not clamped, so only the final value is rounded.
/// Reductions of 3× and more box-shrink first (`BoxShrinker`). Single-threaded on purpose: the
/// service processes several images in parallel.
enum Resampler {
  /// The size of a `width` × `height` image fitted inside `maxEdge` × `maxEdge`, never upscaled:
  /// the long edge becomes exactly `maxEdge` and the short one is rounded to nearest (at least 1).
  static func fitted(width: Int, height: Int, maxEdge: Int) -> (width: Int, height: Int) {
    precondition(width > 0 && height > 0 && maxEdge > 0, "fitted: sizes must be positive")
    let long = max(width, height)
    guard long > maxEdge else { return (width, height) }
    let short = max(1, (min(width, height) * maxEdge + long / 2) / long)
    return width >= height ? (maxEdge, short) : (short, maxEdge)
  }

  /// `image` fitted inside `maxEdge` (see `fitted`), or `image` itself when it already fits.
  static func fit(_ image: PixelBuffer, maxEdge: Int) -> PixelBuffer {
    let size = fitted(width: image.width, height: image.height, maxEdge: maxEdge)
    if size == (image.width, image.height) { return image }
    return resize(image, width: size.width, height: size.height)
  }

  /// `image` resampled to `width` × `height` with Lanczos-3 (tight rows).
  ///
  /// Straight-alpha RGBA is premultiplied first (colour must not bleed out of transparent
  /// pixels) and the result is returned premultiplied, with colour clamped to alpha, so that
  /// `AlphaFlattener` composites it exactly; the pipeline normally flattens before resizing,
  /// so this costs nothing on the usual path.
  ///
  /// `extent`, when given, is how many source samples across and down the destination spans
  /// (see `LanczosWeights.window`); by default the whole source.
  static func resize(
    _ image: PixelBuffer, width: Int, height: Int, extent: (width: Double, height: Double)? = nil
  ) -> PixelBuffer {
    precondition(width > 0 && height > 0, "resize: empty destination")
    var source = image
    if image.layout == .rgba && !image.premultiplied {
      source = AlphaFlattener.premultiplied(image)
    }
    // Large reductions box-shrink first, as libvips does (see BoxShrinker): a 200 MP photo to
    // 2048 px then costs one pass over the source instead of 50-tap filters. The last, partial
    // box counts as a whole one for the filter, a shift of under a quarter output pixel at the
    // far edge.
    let factorX = BoxShrinker.factor(source: source.width, destination: width)
    let factorY = BoxShrinker.factor(source: source.height, destination: height)
    var extent = extent
    if factorX > 1 || factorY > 1 {
      source = BoxShrinker.shrink(source, factorX: factorX, factorY: factorY)
      extent = extent.map {
        (
          min(Double(source.width), $0.width / Double(factorX)),
          min(Double(source.height), $0.height / Double(factorY))
        )
      }
    }
    let horizontal = LanczosWeights.cached(source: source.width, destination: width, extent: extent?.width)
    let vertical = LanczosWeights.cached(source: source.height, destination: height, extent: extent?.height)
    var output = PixelBuffer(
      width: width, height: height, layout: source.layout,
      bytes: resample(source, horizontal: horizontal, vertical: vertical),
      premultiplied: source.premultiplied)
    if output.layout == .rgba && output.premultiplied { clampColourToAlpha(&output) }
    return output
  }

  // Weight bits (14) minus the 4 fractional bits the intermediate keeps.
  private static let verticalShift = Int32(LanczosWeights.bits - 4)
  // Weight bits (14) plus the intermediate's 4 fractional bits.
  private static let horizontalShift = Int32(LanczosWeights.bits + 4)

  // Destination rows are produced in strips of `lanes` rows. The vertical pass writes the
  // strip's rows contiguously; a block transpose turns them sample-major (8 lanes per sample),
  // so the horizontal pass filters all 8 rows at once with 8-lane vector arithmetic instead of
  // one pixel's 3 or 4 channels at a time; a second transpose turns its results back into rows.
  private static let lanes = 8

  private static func resample(
    _ image: PixelBuffer, horizontal: LanczosWeights, vertical: LanczosWeights
  ) -> [UInt8] {
    let channels = image.layout.channels
    let rowSamples = image.width * channels
    let outRowBytes = horizontal.destination * channels
    let count = outRowBytes * vertical.destination
    // Row lengths rounded up to whole 16-sample vectors; the slack is never read back.
    let inStride = (rowSamples + 15) & ~15
    let outStride = (outRowBytes + 15) & ~15
    var rows = [Int16](repeating: 0, count: max(inStride, outStride) * lanes)
    var lanesBuffer = [Int16](repeating: 0, count: max(inStride, outStride) * lanes)
    return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
      image.bytes.withUnsafeBufferPointer { src in
        rows.withUnsafeMutableBufferPointer { rows in
          lanesBuffer.withUnsafeMutableBufferPointer { strip in
            guard let source = src.baseAddress, let dst = out.baseAddress, let r = rows.baseAddress,
              let t = strip.baseAddress
            else { return }
            for top in Swift.stride(from: 0, to: vertical.destination, by: lanes) {
              let valid = min(lanes, vertical.destination - top)
              for lane in 0..<lanes {
                // A short last strip repeats its last row in the unused lanes; they are not stored.
                verticalPass(
                  src: source, rowBytes: image.rowBytes, samples: rowSamples, weights: vertical,
                  y: top + min(lane, valid - 1), dst: r + lane * inStride)
              }
              Transpose8.rowsToLanes(r, stride: inStride, t, count: inStride)
              switch channels {
              case 1: horizontalPass(strip: t, weights: horizontal, dst: r, channels: 1)
              case 3: horizontalPass(strip: t, weights: horizontal, dst: r, channels: 3)
              default: horizontalPass(strip: t, weights: horizontal, dst: r, channels: 4)
              }
              Transpose8.lanesToRows(r, t, stride: outStride, count: outStride)
              for lane in 0..<valid {
                narrow(t + lane * outStride, to: dst + (top + lane) * outRowBytes, count: outRowBytes)
              }
            }
          }
        }
      }
      initialized = count
    }
  }

  // Destination row y: the weighted sum of its window of source rows, 16 samples at a time with
  // the sums kept in registers across all taps (the UInt8 × Int16 products lower to pmaddwd even
  // on baseline x86-64), then a scalar tail.
  @inline(__always)
  private static func verticalPass(
    src: UnsafePointer<UInt8>, rowBytes: Int, samples: Int, weights: LanczosWeights, y: Int,
    dst: UnsafeMutablePointer<Int16>
  ) {
    let start = Int(weights.starts[y])
    let taps = Int(weights.counts[y])
    let base = y * weights.stride
    let first = UnsafeRawPointer(src + start * rowBytes)
    let out = UnsafeMutableRawPointer(dst)
    let half = Int32(1) << (verticalShift - 1)
    weights.weights.withUnsafeBufferPointer { w in
      let w = w.baseAddress! + base
      var i = 0
      while i + 16 <= samples {
        var low = SIMD8<Int32>(repeating: half)
        var high = low
        var p = first + i
        for k in 0..<taps {
          let v = p.loadUnaligned(as: SIMD16<UInt8>.self)
          let wk = SIMD8<Int32>(repeating: Int32(w[k]))
          low &+= SIMD8<Int32>(truncatingIfNeeded: v.lowHalf) &* wk
          high &+= SIMD8<Int32>(truncatingIfNeeded: v.highHalf) &* wk
          p += rowBytes
        }
        let packed = SIMD16<Int16>(
          lowHalf: SIMD8<Int16>(truncatingIfNeeded: low &>> verticalShift),
          highHalf: SIMD8<Int16>(truncatingIfNeeded: high &>> verticalShift))
        out.storeBytes(of: packed, toByteOffset: i * 2, as: SIMD16<Int16>.self)
        i += 16
      }
      let line = first.assumingMemoryBound(to: UInt8.self)
      while i < samples {
        var acc = half
        for k in 0..<taps { acc = acc &+ Int32(w[k]) &* Int32(line[k * rowBytes + i]) }
        dst[i] = Int16(truncatingIfNeeded: acc >> verticalShift)
        i += 1
      }
    }
  }

  // All rows of a strip at once: for each destination pixel and channel, the weighted sum of its
  // window of sample-major strip values, 8 rows per vector, rounded and clamped to 0…255 and
  // stored sample-major. `channels` is a constant at each call site, so its branches fold away.
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

  // Final rounding shift and clamp to 0…255, in 16-bit lanes (pmaxsw/pminsw exist on SSE2; the
  // 32-bit ones do not). The sums stay well inside Int16 after the shift.
  @inline(__always)
  private static func clamp(_ sums: SIMD8<Int32>) -> SIMD8<Int16> {
    SIMD8<Int16>(truncatingIfNeeded: sums &>> horizontalShift)
      .clamped(lowerBound: .zero, upperBound: SIMD8(repeating: 255))
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

  // Resampling overshoot can leave a premultiplied colour above its alpha; clamp it back so the
  // buffer stays valid premultiplied data.
  private static func clampColourToAlpha(_ image: inout PixelBuffer) {
    let count = image.width * image.height * 4
    image.bytes.withUnsafeMutableBufferPointer { p in
      for i in stride(from: 0, to: count, by: 4) {
        let a = p[i + 3]
        p[i] = min(p[i], a)
        p[i + 1] = min(p[i + 1], a)
        p[i + 2] = min(p[i + 2], a)
      }
    }
  }
}
