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
    let scale = (extent ?? Double(source)) / Double(destination)
    let filterScale = max(scale, 1)
    let support = lobes * filterScale
    let center = offset + (Double(index) + 0.5) * scale
    let first = min(source - 1, max(0, Int((center - support + 0.5).rounded(.down))))
    let end = min(source, Int((center + support + 0.5).rounded(.down)))
    var taps = (first..<max(end, first + 1)).map { kernel((Double($0) - center + 0.5) / filterScale) }
    let total = taps.reduce(0, +)
    if total == 0 {
      // Unreachable for a Lanczos window that contains its centre, but keep a defined answer.
      taps = [Double](repeating: 0, count: taps.count)
      taps[min(taps.count - 1, max(0, Int(center.rounded(.down)) - first))] = 1
      return (first, taps)
    }
    return (first, taps.map { $0 / total })
  }

  init(source: Int, destination: Int, extent: Double? = nil, offset: Double = 0) {
    precondition(source > 0 && destination > 0, "LanczosWeights: empty axis")
    precondition(extent.map { $0 > 0 && $0.isFinite } ?? true, "LanczosWeights: bad extent")
    precondition(offset.isFinite, "LanczosWeights: bad offset")
    self.source = source
    self.destination = destination
    let windows = (0..<destination).map {
      LanczosWeights.window($0, source: source, destination: destination, extent: extent, offset: offset)
    }
    var starts = [Int32](repeating: 0, count: destination)
    var counts = [Int32](repeating: 0, count: destination)
    var quantised: [[Int16]] = []
    quantised.reserveCapacity(destination)
    let one = 1 << LanczosWeights.bits
    for (index, window) in windows.enumerated() {
      var taps = window.taps.map { Int(($0 * Double(one)).rounded()) }
      // Put the rounding residue on the biggest tap so the sum is exactly one: a constant image
      // then resamples to exactly the same constant.
      let residue = one - taps.reduce(0, +)
      if let biggest = taps.indices.max(by: { taps[$0] < taps[$1] }) { taps[biggest] += residue }
      // Drop zero taps at either end: fewer multiplies, same result.
      var start = window.start
      while taps.count > 1, taps.first == 0 {
        taps.removeFirst()
        start += 1
      }
      while taps.count > 1, taps.last == 0 { taps.removeLast() }
      starts[index] = Int32(start)
      counts[index] = Int32(taps.count)
      quantised.append(taps.map { Int16(clamping: $0) })
    }
    let stride = quantised.map(\.count).max() ?? 1
    var weights = [Int16](repeating: 0, count: stride * destination)
    for (index, taps) in quantised.enumerated() {
      for (k, tap) in taps.enumerated() { weights[index * stride + k] = tap }
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
