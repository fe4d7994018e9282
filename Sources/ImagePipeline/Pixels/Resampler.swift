import ImageCodecs

/// Fits images inside a bounding square and resamples them with a separable Lanczos-3 filter.
///
/// The filter runs vertically first, one destination row at a time, straight from the source
/// rows into a row of 32-bit sums (contiguous, vectorisable), then horizontally on that single
/// intermediate row: no whole-image intermediate, and the costlier per-pixel horizontal pass
/// runs on destination rows only. Weights are 14-bit fixed point summing to exactly one; the
/// intermediate keeps 4 fractional bits and is not clamped, so only the final value is rounded.
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
  static func resize(_ image: PixelBuffer, width: Int, height: Int) -> PixelBuffer {
    precondition(width > 0 && height > 0, "resize: empty destination")
    var source = image
    if image.layout == .rgba && !image.premultiplied {
      source = AlphaFlattener.premultiplied(image)
    }
    let horizontal = LanczosWeights(source: source.width, destination: width)
    let vertical = LanczosWeights(source: source.height, destination: height)
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

  private static func resample(
    _ image: PixelBuffer, horizontal: LanczosWeights, vertical: LanczosWeights
  ) -> [UInt8] {
    let channels = image.layout.channels
    let rowSamples = image.width * channels
    let outRowBytes = horizontal.destination * channels
    let count = outRowBytes * vertical.destination
    // One vertically filtered row at 4 fractional bits; 4 samples of slack let the horizontal
    // pass read a whole SIMD4 at the last RGB pixel.
    var row = [Int16](repeating: 0, count: rowSamples + 4)
    return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
      image.bytes.withUnsafeBufferPointer { src in
        row.withUnsafeMutableBufferPointer { row in
          for y in 0..<vertical.destination {
            verticalPass(
              src: src, rowBytes: image.rowBytes, samples: rowSamples, weights: vertical, y: y,
              row: row)
            let dst = UnsafeMutableBufferPointer(rebasing: out[(y * outRowBytes)..<((y + 1) * outRowBytes)])
            switch channels {
            case 1: horizontalPassGray(row: row, weights: horizontal, dst: dst)
            case 3: horizontalPass(row: row, weights: horizontal, dst: dst, channels: 3)
            default: horizontalPass(row: row, weights: horizontal, dst: dst, channels: 4)
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
    src: UnsafeBufferPointer<UInt8>, rowBytes: Int, samples: Int, weights: LanczosWeights, y: Int,
    row: UnsafeMutableBufferPointer<Int16>
  ) {
    let start = Int(weights.starts[y])
    let taps = Int(weights.counts[y])
    let base = y * weights.stride
    guard let source = src.baseAddress, let out = row.baseAddress else { return }
    let first = UnsafeRawPointer(source + start * rowBytes)
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
        UnsafeMutableRawPointer(out + i).storeBytes(of: packed, as: SIMD16<Int16>.self)
        i += 16
      }
      let line = first.assumingMemoryBound(to: UInt8.self)
      while i < samples {
        var acc = half
        for k in 0..<taps { acc = acc &+ Int32(w[k]) &* Int32(line[k * rowBytes + i]) }
        out[i] = Int16(truncatingIfNeeded: acc >> verticalShift)
        i += 1
      }
    }
  }

  private static func horizontalPass(
    row: UnsafeMutableBufferPointer<Int16>, weights: LanczosWeights,
    dst: UnsafeMutableBufferPointer<UInt8>, channels: Int
  ) {
    guard let line = row.baseAddress, let out = dst.baseAddress else { return }
    let half = SIMD4<Int32>(repeating: 1 << (horizontalShift - 1))
    let raw = UnsafeRawPointer(line)
    weights.weights.withUnsafeBufferPointer { w in
      weights.starts.withUnsafeBufferPointer { starts in
        weights.counts.withUnsafeBufferPointer { counts in
          for x in 0..<weights.destination {
            var acc = half
            var p = raw + Int(starts[x]) * channels * 2
            let base = x * weights.stride
            for k in 0..<Int(counts[x]) {
              let v = SIMD4<Int32>(truncatingIfNeeded: p.loadUnaligned(as: SIMD4<Int16>.self))
              acc &+= v &* SIMD4<Int32>(repeating: Int32(w[base + k]))
              p += channels * 2
            }
            let v = (acc &>> SIMD4<Int32>(repeating: horizontalShift))
              .clamped(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
            let o = out + x * channels
            o[0] = UInt8(truncatingIfNeeded: v[0])
            o[1] = UInt8(truncatingIfNeeded: v[1])
            o[2] = UInt8(truncatingIfNeeded: v[2])
            if channels == 4 { o[3] = UInt8(truncatingIfNeeded: v[3]) }
          }
        }
      }
    }
  }

  private static func horizontalPassGray(
    row: UnsafeMutableBufferPointer<Int16>, weights: LanczosWeights, dst: UnsafeMutableBufferPointer<UInt8>
  ) {
    guard let line = row.baseAddress, let out = dst.baseAddress else { return }
    let half = Int32(1) << (horizontalShift - 1)
    weights.weights.withUnsafeBufferPointer { w in
      weights.starts.withUnsafeBufferPointer { starts in
        weights.counts.withUnsafeBufferPointer { counts in
          for x in 0..<weights.destination {
            var acc = half
            let p = line + Int(starts[x])
            let base = x * weights.stride
            for k in 0..<Int(counts[x]) { acc = acc &+ Int32(w[base + k]) &* Int32(p[k]) }
            out[x] = UInt8(clamping: acc >> horizontalShift)
          }
        }
      }
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
