import Foundation
import ImageCodecs

/// Fixed-point Lanczos-3 weights for resampling one axis from `source` to `destination` samples:
/// for each destination index, the first source index, the tap count and the taps.
struct LanczosWeights: Sendable {
  /// Fractional bits of a weight: every destination's weights sum to exactly `1 << bits`.
  static let bits = 14
  /// The Lanczos window half-width (a = 3).
  static let lobes = 3.0

  let source: Int
  let destination: Int
  /// Taps stored per destination index (the widest window); shorter windows are zero-padded.
  let stride: Int
  /// First source index of each destination's window.
  private(set) var starts: [Int32]
  /// Tap count of each destination's window (≥ 1).
  private(set) var counts: [Int32]
  /// `stride` weights per destination index, summing to `1 << bits`.
  private(set) var weights: [Int16]

  /// The continuous Lanczos-3 kernel.
  static func kernel(_ x: Double) -> Double {
    let x = abs(x)
    if x < 1e-9 { return 1 }
    if x >= lobes { return 0 }
    let px = Double.pi * x
    return lobes * sin(px) * sin(px / lobes) / (px * px)
  }

  /// The real-valued, normalised weights of one destination index: first source index and taps.
  /// Pixel i covers [i, i + 1); the kernel is stretched by the scale when shrinking, and taps
  /// that would fall outside the image are dropped and the rest renormalised (no edge smear).
  /// `extent` is how many source samples the destination spans (default: all of them) and
  /// `offset` where it starts (default 0): a chroma plane whose last sample hangs over an odd
  /// edge spans half a sample less; a cropped or co-sited one starts part-way into a sample.
  static func window(
    _ index: Int, source: Int, destination: Int, extent: Double? = nil, offset: Double = 0
  ) -> (start: Int, taps: [Double]) {
    var taps: [Double] = []
    let start = window(
      index, geometry: Geometry(source: source, destination: destination, extent: extent, offset: offset),
      into: &taps)
    return (start, taps)
  }

  /// The scale and support shared by every window of one axis.
  struct Geometry {
    let source: Int
    let scale: Double
    let filterScale: Double
    let support: Double
    let offset: Double

    init(source: Int, destination: Int, extent: Double?, offset: Double) {
      self.source = source
      scale = (extent ?? Double(source)) / Double(destination)
      filterScale = max(scale, 1)
      support = LanczosWeights.lobes * filterScale
      self.offset = offset
    }
  }

  /// `window(_:source:destination:extent:offset:)` into a reused array; returns the first index.
  /// The taps sit at evenly spaced kernel positions, so their two sines come from one `sin` and
  /// `cos` each by rotation (angle addition) instead of two `sin` calls per tap: a 200 MP photo's
  /// tables have ~50 taps per destination index, and `sin` was 1 % of a one-image process.
  static func window(_ index: Int, geometry g: Geometry, into taps: inout [Double]) -> Int {
    let center = g.offset + (Double(index) + 0.5) * g.scale
    let first = min(g.source - 1, max(0, Int((center - g.support + 0.5).rounded(.down))))
    let end = max(min(g.source, Int((center + g.support + 0.5).rounded(.down))), first + 1)
    taps.removeAll(keepingCapacity: true)
    // Kernel position of tap j: x0 + j·dx; the kernel's two sines at π·x and π·x/3.
    let x0 = (Double(first) - center + 0.5) / g.filterScale
    let dx = 1 / g.filterScale
    let step = Double.pi * dx
    let (stepSin, stepCos) = (sin(step), cos(step))
    let (thirdSin, thirdCos) = (sin(step / lobes), cos(step / lobes))
    var (s1, c1) = (sin(Double.pi * x0), cos(Double.pi * x0))
    var (s3, c3) = (sin(Double.pi * x0 / lobes), cos(Double.pi * x0 / lobes))
    var total = 0.0
    for j in 0..<(end - first) {
      let x = x0 + Double(j) * dx
      let magnitude = abs(x)
      let value: Double
      if magnitude < 1e-9 {
        value = 1
      } else if magnitude >= lobes {
        value = 0
      } else {
        let px = Double.pi * x
        value = lobes * s1 * s3 / (px * px)
      }
      taps.append(value)
      total += value
      (s1, c1) = (s1 * stepCos + c1 * stepSin, c1 * stepCos - s1 * stepSin)
      (s3, c3) = (s3 * thirdCos + c3 * thirdSin, c3 * thirdCos - s3 * thirdSin)
    }
    if total == 0 {
      // Unreachable for a Lanczos window that contains its centre, but keep a defined answer.
      for j in taps.indices { taps[j] = 0 }
      taps[min(taps.count - 1, max(0, Int(center.rounded(.down)) - first))] = 1
      return first
    }
    for j in taps.indices { taps[j] /= total }
    return first
  }

  init(source: Int, destination: Int, extent: Double? = nil, offset: Double = 0) {
    precondition(source > 0 && destination > 0, "LanczosWeights: empty axis")
    precondition(extent.map { $0 > 0 && $0.isFinite } ?? true, "LanczosWeights: bad extent")
    precondition(offset.isFinite, "LanczosWeights: bad offset")
    self.source = source
    self.destination = destination
    let geometry = Geometry(source: source, destination: destination, extent: extent, offset: offset)
    var starts = [Int32](repeating: 0, count: destination)
    var counts = [Int32](repeating: 0, count: destination)
    // Every destination's quantised taps back to back (counts[i] of them), strided below.
    var packed: [Int16] = []
    packed.reserveCapacity(destination * (Int(2 * geometry.support) + 2))
    var real: [Double] = []
    var taps: [Int] = []
    let one = 1 << LanczosWeights.bits
    for index in 0..<destination {
      var start = LanczosWeights.window(index, geometry: geometry, into: &real)
      taps.removeAll(keepingCapacity: true)
      var sum = 0
      var biggest = 0
      for (k, value) in real.enumerated() {
        let tap = Int((value * Double(one)).rounded())
        taps.append(tap)
        sum += tap
        if tap > taps[biggest] { biggest = k }
      }
      // Put the rounding residue on the biggest tap so the sum is exactly one: a constant image
      // then resamples to exactly the same constant.
      taps[biggest] += one - sum
      // Drop zero taps at either end: fewer multiplies, same result.
      var lower = 0
      var upper = taps.count
      while upper - lower > 1, taps[lower] == 0 {
        lower += 1
        start += 1
      }
      while upper - lower > 1, taps[upper - 1] == 0 { upper -= 1 }
      starts[index] = Int32(start)
      counts[index] = Int32(upper - lower)
      for k in lower..<upper { packed.append(Int16(clamping: taps[k])) }
    }
    let stride = Int(counts.max() ?? 1)
    var weights = [Int16](repeating: 0, count: stride * destination)
    var offset = 0
    for index in 0..<destination {
      let count = Int(counts[index])
      for k in 0..<count { weights[index * stride + k] = packed[offset + k] }
      offset += count
    }
    self.stride = stride
    self.starts = starts
    self.counts = counts
    self.weights = weights
  }

  /// The weights for `source` → `destination`, shared: a service sees the same few photo sizes
  /// over and over, and building a table costs as much as a tenth of resizing a 12 MP photo.
  static func cached(
    source: Int, destination: Int, extent: Double? = nil, offset: Double = 0
  ) -> LanczosWeights {
    let key = CacheKey(source: source, destination: destination, extent: extent, offset: offset)
    if let hit = cache.value(for: key) { return hit }
    let built = LanczosWeights(source: source, destination: destination, extent: extent, offset: offset)
    cache.store(built, for: key)
    return built
  }

  private struct CacheKey: Hashable, Sendable {
    var source: Int
    var destination: Int
    var extent: Double?
    var offset: Double
  }

  // Each table is at most a few hundred KiB.
  private static let cache = SharedCache<CacheKey, LanczosWeights>(limit: 64)
}
