import Foundation
import ImageCodecs
import Testing

@testable import ImagePipeline

@Suite struct ResamplerTests {
  // (source width, height, max edge, expected width, height); the 5712 × 4284 photo is fitted
  // after its 90° rotation, as the pipeline does.
  static let fittedSizes: [(Int, Int, Int, Int, Int)] = [
    (4032, 3024, 2048, 2048, 1536),
    (3024, 4032, 2048, 1536, 2048),
    (4608, 1976, 2048, 2048, 878),
    (1488, 2240, 2048, 1360, 2048),
    (9643, 10328, 2048, 1912, 2048),
    (4284, 5712, 2048, 1536, 2048),
    (4000, 4000, 2048, 2048, 2048),
    (2048, 1000, 2048, 2048, 1000),
    (1200, 800, 2048, 1200, 800),
    (1, 1, 2048, 1, 1),
    (10000, 3, 2048, 2048, 1),
    (3, 10000, 2048, 1, 2048),
  ]

  @Test(arguments: fittedSizes.indices)
  func fittedSizeKeepsTheAspectRatioAndNeverUpscales(index: Int) {
    let (width, height, maxEdge, expectedWidth, expectedHeight) = Self.fittedSizes[index]
    let size = Resampler.fitted(width: width, height: height, maxEdge: maxEdge)
    #expect(size.width == expectedWidth && size.height == expectedHeight, "\(width)x\(height)")
  }

  @Test func rotatedPhotoIsFittedAfterOrientation() {
    let display = Orientation.right.displaySize(width: 5712, height: 4284)
    let size = Resampler.fitted(width: display.width, height: display.height, maxEdge: 2048)
    #expect(size == (1536, 2048))
  }

  @Test func imageThatAlreadyFitsIsReturnedAsIs() {
    let source = PixelFixtures.noise(width: 30, height: 20, layout: .rgb, padding: 2)
    let result = Resampler.fit(source, maxEdge: 30)
    #expect(result.bytes == source.bytes && result.width == 30)
  }

  @Test(
    arguments: OrientationTests.layouts,
    [(40, 30, 17, 9), (1, 50, 1, 7), (50, 1, 3, 1), (9, 9, 1, 1), (200, 150, 10, 7), (1000, 3, 9, 1)])
  func constantImageResamplesToExactlyTheSameConstant(
    layout: PixelBuffer.Layout, size: (Int, Int, Int, Int)
  ) {
    for value in [0, 1, 128, 254, 255] as [UInt8] {
      var source = PixelBuffer(
        width: size.0, height: size.1, layout: layout,
        bytes: [UInt8](repeating: value, count: size.0 * size.1 * layout.channels))
      source.premultiplied = layout == .rgba
      let result = Resampler.resize(source, width: size.2, height: size.3)
      #expect(result.width == size.2 && result.height == size.3)
      #expect(result.bytes.allSatisfy { $0 == value }, "\(layout) \(value) \(size)")
    }
  }

  @Test func horizontalAndVerticalGradientsStayMonotonic() {
    let (width, height) = (301, 203)
    var bytes = [UInt8](repeating: 0, count: width * height)
    for y in 0..<height {
      for x in 0..<width {
        bytes[y * width + x] = UInt8((x * 255 / (width - 1) + y * 255 / (height - 1)) / 2)
      }
    }
    let source = PixelBuffer(width: width, height: height, layout: .gray, bytes: bytes)
    let result = Resampler.resize(source, width: 97, height: 64)
    for y in 0..<64 {
      for x in 1..<97 { #expect(result.bytes[y * 97 + x] >= result.bytes[y * 97 + x - 1], "row \(y) x \(x)") }
    }
    for x in 0..<97 {
      for y in 1..<64 {
        #expect(result.bytes[y * 97 + x] >= result.bytes[(y - 1) * 97 + x], "col \(x) y \(y)")
      }
    }
    #expect(result.bytes.first! <= 3 && result.bytes.last! >= 252)
  }

  @Test(
    arguments: OrientationTests.layouts, [(97, 61, 40, 25), (64, 48, 63, 47), (30, 90, 7, 21), (2, 40, 1, 9)])
  func fixedPointResultIsWithinOneLevelOfAFloatingPointReference(
    layout: PixelBuffer.Layout, size: (Int, Int, Int, Int)
  ) {
    // Smooth content plus noise, the harder case for ringing and rounding.
    var source = PixelFixtures.noise(width: size.0, height: size.1, layout: layout, seed: 3, padding: 1)
    for y in 0..<size.1 {
      for i in 0..<(size.0 * layout.channels) {
        let smooth = 128 + 100 * sin(Double(i) / 9) * cos(Double(y) / 7)
        let offset = y * source.rowBytes + i
        source.bytes[offset] = UInt8(clamping: Int(smooth) + Int(source.bytes[offset] >> 3) - 16)
      }
    }
    source.premultiplied = layout == .rgba  // compare colour channels without premultiplying
    if layout == .rgba {
      for y in 0..<size.1 { for x in 0..<size.0 { source.bytes[y * source.rowBytes + x * 4 + 3] = 255 } }
    }
    let result = Resampler.resize(source, width: size.2, height: size.3)
    let reference = Self.referenceResize(source, width: size.2, height: size.3)
    let worst = zip(result.bytes, reference).map { abs(Int($0) - Int($1)) }.max() ?? 0
    #expect(worst <= 1, "max error \(worst) for \(layout) \(size)")
  }

  @Test func largeReductionsBoxShrinkFirstAndStayCloseToAPureLanczosFilter() {
    // 12× smaller: boxes of 6 × 6, then Lanczos-3 for the remaining factor of 2. On photo-like
    // (smooth) content the result matches a direct 12× Lanczos-3 filter within 2 levels (1 measured).
    #expect(BoxShrinker.factor(source: 480, destination: 40) == 6)
    let (width, height) = (480, 360)
    var bytes = [UInt8](repeating: 0, count: width * height * 3)
    for y in 0..<height {
      for x in 0..<width {
        for c in 0..<3 {
          let v = 128 + 90 * sin(Double(x + 40 * c) / 37) * cos(Double(y) / 29)
          bytes[(y * width + x) * 3 + c] = UInt8(v.rounded())
        }
      }
    }
    let source = PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
    let result = Resampler.resize(source, width: 40, height: 30)
    let direct = Self.referenceResize(source, width: 40, height: 30, boxShrink: false)
    let worst = zip(result.bytes, direct).map { abs(Int($0) - Int($1)) }.max() ?? 0
    #expect(worst <= 2, "max difference \(worst)")
  }

  @Test(arguments: [(1, 1), (2, 2), (2, 3), (2, 4), (4, 2), (4, 4), (5, 2), (16, 16)])
  func boxShrinkingAveragesEveryBlockIncludingPartialEdgeBlocks(factors: (Int, Int)) {
    let (fx, fy) = factors
    for layout in OrientationTests.layouts {
      let source = PixelFixtures.noise(width: 37, height: 23, layout: layout, seed: 9, padding: 2)
      let result = BoxShrinker.shrink(source, factorX: fx, factorY: fy)
      #expect(result.width == (37 + fx - 1) / fx && result.height == (23 + fy - 1) / fy)
      var wrong = 0
      for y in 0..<result.height {
        for x in 0..<result.width {
          let xs = (x * fx)..<min(37, x * fx + fx)
          let ys = (y * fy)..<min(23, y * fy + fy)
          for c in 0..<layout.channels {
            let total = ys.reduce(0) { t, sy in
              xs.reduce(t) { $0 + Int(PixelFixtures.pixel(source, $1, sy)[c]) }
            }
            let n = xs.count * ys.count
            if Int(PixelFixtures.pixel(result, x, y)[c]) != (total + n / 2) / n { wrong += 1 }
          }
        }
      }
      #expect(wrong == 0, "\(layout)")
    }
  }

  @Test func boxFactorIsHalfTheScaleRoundedAndOnlyKicksInFromThreeTimes() {
    #expect(BoxShrinker.factor(source: 2520, destination: 2048) == 1)
    #expect(BoxShrinker.factor(source: 4096, destination: 2048) == 1)
    #expect(BoxShrinker.factor(source: 299, destination: 100) == 1)
    #expect(BoxShrinker.factor(source: 300, destination: 100) == 2)
    #expect(BoxShrinker.factor(source: 16320, destination: 2048) == 4)
    #expect(BoxShrinker.factor(source: 100_000, destination: 10) == BoxShrinker.maxFactor)
  }

  @Test func resizingToTheSameSizeIsTheIdentity() {
    let source = PixelFixtures.noise(width: 33, height: 17, layout: .rgb, padding: 4)
    let result = Resampler.resize(source, width: 33, height: 17)
    #expect(PixelFixtures.pixels(result) == PixelFixtures.pixels(source))
  }

  @Test func singlePixelRowsAndColumnsResample() {
    let row = PixelFixtures.noise(width: 1000, height: 1, layout: .rgb)
    #expect(Resampler.resize(row, width: 10, height: 1).bytes.count == 30)
    let column = PixelFixtures.noise(width: 1, height: 1000, layout: .gray)
    #expect(Resampler.resize(column, width: 1, height: 1).bytes.count == 1)
  }

  @Test func weightsOfEveryDestinationSumToExactlyOne() {
    for (source, destination) in [(4032, 2048), (2520, 2048), (7, 3), (1, 1), (5, 1), (100, 99)] {
      let table = LanczosWeights(source: source, destination: destination)
      for index in 0..<destination {
        let taps = table.weights[(index * table.stride)..<(index * table.stride + Int(table.counts[index]))]
        #expect(taps.reduce(0) { $0 + Int($1) } == 1 << LanczosWeights.bits)
        #expect(Int(table.starts[index]) >= 0 && Int(table.starts[index] + table.counts[index]) <= source)
      }
    }
  }

  @Test(.enabled(if: LanczosKernels.hasAVX2, "skipped: no AVX2 on this CPU"))
  func theAVX2VerticalPassEqualsTheSSE2OneBitForBit() {
    // Shrinking 2× (12 taps), 16× (~100 taps), enlarging (6 taps) and 1-tap tables; widths that
    // end inside a 32- and a 16-sample vector and in the scalar tail; random bytes, so extreme
    // Lanczos overshoot and wrapping sums are covered too.
    var random = XorShift(0x2545_F491_4F6C_DD1D)
    for (source, destination) in [(4032, 2048), (3000, 187), (50, 151), (9, 9)] {
      let weights = LanczosWeights(source: source, destination: destination)
      let rows = (0..<weights.stride).map { _ in
        (0..<4101).map { _ in UInt8(truncatingIfNeeded: random.next()) }
      }
      let pointers = rows.map { row in row.withUnsafeBufferPointer { UnsafePointer(strdupBytes($0)) } }
      defer { for pointer in pointers { pointer.deallocate() } }
      for samples in [1, 15, 16, 31, 33, 47, 4032, 4101] {
        for y in [0, destination / 2, destination - 1] {
          var sse2 = [Int16](repeating: 0, count: samples)
          var avx2 = [Int16](repeating: 0, count: samples)
          pointers.withUnsafeBufferPointer { table in
            sse2.withUnsafeMutableBufferPointer {
              LanczosKernels.verticalPassSSE2(
                rows: table.baseAddress!, samples: samples, weights: weights, y: y, dst: $0.baseAddress!)
            }
            avx2.withUnsafeMutableBufferPointer {
              LanczosKernels.verticalPassAVX2(
                rows: table.baseAddress!, samples: samples, weights: weights, y: y, dst: $0.baseAddress!)
            }
          }
          #expect(sse2 == avx2, "\(source)→\(destination) y \(y), \(samples) samples")
        }
      }
    }
    /// A heap copy of `bytes` that outlives the closure (freed by the caller).
    func strdupBytes(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
      let copy = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
      copy.initialize(from: bytes.baseAddress!, count: bytes.count)
      return copy
    }
  }

  @Test(.enabled(if: LanczosKernels.hasAVX2, "skipped: no AVX2 on this CPU"))
  func theAVX2HorizontalPassEqualsTheSSE2OneBitForBit() {
    // Shrinking 2× (12 taps), ~16× (~100 taps, where neighbouring windows differ in length and
    // the right edge's clamped windows make the pair path fall back), enlarging, 1 tap, and odd
    // destination counts (a last pixel without a partner); 1, 3 and 4 channels; random 16-bit
    // samples, so wrapping sums and both ends of the clamp are covered.
    var random = XorShift(0x9E37_79B9_7F4A_7C15)
    var clamped = (low: false, high: false)
    for (source, destination) in [(4032, 2048), (3000, 187), (50, 151), (9, 9), (2016, 1023), (7, 3)] {
      for channels in [1, 3, 4] {
        let weights = LanczosWeights(source: source, destination: destination)
        let scratch = LanczosKernels.Scratch(
          inSamples: source * channels, outSamples: destination * channels, horizontal: weights)
        let count = (scratch.stride + 16) * LanczosKernels.lanes
        for index in 0..<count { scratch.strip[index] = Int16(truncatingIfNeeded: random.next()) }
        var sse2 = [Int16](repeating: 0, count: count)
        var avx2 = [Int16](repeating: 0, count: count)
        sse2.withUnsafeMutableBufferPointer {
          LanczosKernels.horizontalPassSSE2(
            strip: scratch.strip, weights: weights, scratch: scratch, dst: $0.baseAddress!, channels: channels
          )
        }
        avx2.withUnsafeMutableBufferPointer {
          LanczosKernels.horizontalPassAVX2(
            strip: scratch.strip, weights: weights, scratch: scratch, dst: $0.baseAddress!, channels: channels
          )
        }
        // The first difference, not the arrays (tens of thousands of samples).
        let differs = sse2.indices.first { sse2[$0] != avx2[$0] }
        #expect(differs == nil, "\(source)→\(destination), \(channels) channels: sample \(differs ?? -1)")
        clamped.low = clamped.low || sse2.contains(0)
        clamped.high = clamped.high || sse2.contains(255)
      }
    }
    #expect(clamped.low && clamped.high, "the clamp is not exercised")
  }

  @Test func windowTapsByRotationAgreeWithTheKernelEvaluatedTapByTap() {
    // (source, destination, extent, offset): shrinking 2×, ~16× (a 200 MP photo), enlarging,
    // and a chroma plane's shortened extent and co-sited offset.
    let axes: [(Int, Int, Double?, Double)] = [
      (4032, 2048, nil, 0), (16320, 1024, nil, 0), (100, 333, nil, 0), (2016, 1024, 2015.5, -0.25),
    ]
    for (source, destination, extent, offset) in axes {
      let scale = (extent ?? Double(source)) / Double(destination)
      let filterScale = max(scale, 1)
      for index in [0, 1, destination / 3, destination / 2, destination - 2, destination - 1] {
        let (start, taps) = LanczosWeights.window(
          index, source: source, destination: destination, extent: extent, offset: offset)
        let center = offset + (Double(index) + 0.5) * scale
        let direct = taps.indices.map {
          LanczosWeights.kernel((Double(start + $0) - center + 0.5) / filterScale)
        }
        let total = direct.reduce(0, +)
        for (tap, expected) in zip(taps, direct) {
          #expect(abs(tap - expected / total) < 1e-12, "\(source)→\(destination) #\(index)")
        }
      }
    }
  }

  @Test func transparentPixelsDoNotBleedTheirColourIntoOpaqueNeighbours() {
    // Left half opaque red, right half fully transparent but storing pure green.
    let (width, height) = (40, 8)
    var bytes = [UInt8](repeating: 0, count: width * height * 4)
    for y in 0..<height {
      for x in 0..<width {
        let p = (y * width + x) * 4
        if x < width / 2 {
          bytes[p] = 255
          bytes[p + 3] = 255
        } else {
          bytes[p + 1] = 255
        }
      }
    }
    let source = PixelBuffer(width: width, height: height, layout: .rgba, bytes: bytes)
    let result = Resampler.resize(source, width: 10, height: 2)
    #expect(result.premultiplied)
    let flat = AlphaFlattener.flattenOntoWhite(result)
    for p in stride(from: 0, to: flat.bytes.count, by: 3) {
      // Over white, red and transparent mix to red ≥ green = blue: never a green cast.
      #expect(flat.bytes[p + 1] == flat.bytes[p + 2], "green leaked at \(p / 3)")
      #expect(flat.bytes[p] >= flat.bytes[p + 1])
    }
  }

  /// Straightforward floating-point Lanczos-3: the same geometry (pixel centres, stretched
  /// kernel, out-of-image taps dropped and renormalised), no fixed point, one rounding at the end.
  /// With `boxShrink`, the same 8-bit box pre-shrink as the resampler for reductions of 3× and
  /// more (box means rounded, as the resampler's 8-bit intermediate is part of its definition).
  static func referenceResize(_ image: PixelBuffer, width: Int, height: Int, boxShrink: Bool = true)
    -> [UInt8]
  {
    let fx = BoxShrinker.factor(source: image.width, destination: width)
    let fy = BoxShrinker.factor(source: image.height, destination: height)
    var image = image
    if boxShrink && (fx > 1 || fy > 1) {
      let channels = image.layout.channels
      let (w, h) = ((image.width + fx - 1) / fx, (image.height + fy - 1) / fy)
      var bytes = [UInt8](repeating: 0, count: w * h * channels)
      for y in 0..<h {
        for x in 0..<w {
          let xs = (x * fx)..<min(image.width, x * fx + fx)
          let ys = (y * fy)..<min(image.height, y * fy + fy)
          for c in 0..<channels {
            var total = 0.0
            for sy in ys {
              for sx in xs { total += Double(image.bytes[sy * image.rowBytes + sx * channels + c]) }
            }
            bytes[(y * w + x) * channels + c] = UInt8((total / Double(xs.count * ys.count)).rounded())
          }
        }
      }
      image = PixelBuffer(width: w, height: h, layout: image.layout, bytes: bytes)
    }
    func weights(_ source: Int, _ destination: Int) -> [(Int, [Double])] {
      let scale = Double(source) / Double(destination)
      let stretch = max(scale, 1)
      return (0..<destination).map { i in
        let center = (Double(i) + 0.5) * scale
        let lo = max(0, Int(floor(center - 3 * stretch + 0.5)))
        let hi = min(source, Int(floor(center + 3 * stretch + 0.5)))
        let raw = (lo..<hi).map { j -> Double in
          let x = abs((Double(j) + 0.5 - center) / stretch)
          if x < 1e-12 { return 1 }
          return x < 3 ? 3 * sin(.pi * x) * sin(.pi * x / 3) / (.pi * .pi * x * x) : 0
        }
        let total = raw.reduce(0, +)
        return (lo, raw.map { $0 / total })
      }
    }
    let channels = image.layout.channels
    let horizontal = weights(image.width, width)
    let vertical = weights(image.height, height)
    // Separable, in Double: rows first, then columns; the same sums as the 2-D filter.
    var rows = [Double](repeating: 0, count: width * image.height * channels)
    for y in 0..<image.height {
      for x in 0..<width {
        let (left, hw) = horizontal[x]
        for c in 0..<channels {
          var sum = 0.0
          for (i, wx) in hw.enumerated() {
            sum += wx * Double(image.bytes[y * image.rowBytes + (left + i) * channels + c])
          }
          rows[(y * width + x) * channels + c] = sum
        }
      }
    }
    var output = [UInt8](repeating: 0, count: width * height * channels)
    for y in 0..<height {
      let (top, vw) = vertical[y]
      for x in 0..<width {
        for c in 0..<channels {
          var sum = 0.0
          for (j, wy) in vw.enumerated() { sum += wy * rows[((top + j) * width + x) * channels + c] }
          output[(y * width + x) * channels + c] = UInt8(clamping: Int(sum.rounded()))
        }
      }
    }
    return output
  }
}

/// Deterministic pseudo-random numbers (xorshift64) for the kernels' bit-for-bit tests.
private struct XorShift {
  var state: UInt64
  init(_ seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    return state
  }
}
