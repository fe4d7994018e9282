private import CLCMS2

/// An 8-bit RGB(A) conversion from an RGB matrix-shaper profile to a matrix-shaper target, in
/// fixed point: three input curves (tables), one 3×3 matrix, one output curve (table).
///
/// lcms 2.14 does not take its own matrix-shaper shortcut for the v4 Display P3 profile iPhones
/// write (~15 ns/pixel, a third of the CPU of a 12 MP upload); this does the same arithmetic in a
/// few ns. It agrees with lcms's 8-bit transform to within one level per channel (tested).
/// Immutable after init, so one instance serves several threads at once.
final class MatrixShaperTransform: Sendable {
  /// For each input channel (red, green, blue; 256 values each) the linear light of the value times
  /// the matrix column of that channel, in Q29: summing three entries gives target linear RGB.
  /// Four Int32 per entry: target red, green, blue, and one unused (aligned, index by shifting).
  /// Red's entries also carry the rounding.
  private let products: [Int32]
  /// 8-bit target value of each linear value in Q14, from `lowest` on: the whole range the sums
  /// can reach, so the hot loop needs no clamping (out-of-gamut entries hold 0 or 255).
  private let encode: [UInt8]
  /// The lowest reachable output index (≤ 0), the one `encode` starts at.
  private let lowest: Int32

  // Q29 products summed and shifted by 15 give the Q14 index of `encode` (Q14, not Q16, so the
  // table fits in L1 beside the products).
  private static let productOne = Double(1 << 29)
  private static let outputOne: Int32 = 1 << 14
  private static let shift: Int32 = 15

  /// nil when either profile is not RGB matrix-shaper, or the matrix is too extreme for Int32 sums.
  init?(source: LCMSProfile, target: LCMSProfile) {
    guard let sourceCurves = Self.curves(source), let sourceMatrix = Self.rgbToXYZ(source),
      let targetCurves = Self.curves(target), let targetMatrix = Self.rgbToXYZ(target),
      let targetInverse = Self.inverse(targetMatrix)
    else { return nil }
    // Source RGB → XYZ (D50) → target RGB, both linear.
    let matrix = Self.multiply(targetInverse, sourceMatrix)
    // A sum's magnitude is at most the row's absolute sum times 2^29; keep it well inside Int32.
    // (Written so that a NaN from a hostile profile fails too.)
    for row in 0..<3 where !((0..<3).reduce(0.0, { $0 + abs(matrix[row * 3 + $1]) }) < 3.9) {
      return nil
    }

    var products = [Int32](repeating: 0, count: 3 * 256 * 4)
    let half = Int32(1) << (Self.shift - 1)
    for channel in 0..<3 {
      for value in 0..<256 {
        // lcms clamps curve outputs to 0…1 in its 8/16-bit pipelines; so does this.
        let evaluated = Double(cmsEvalToneCurveFloat(sourceCurves[channel], Float(value) / 255))
        guard evaluated.isFinite else { return nil }
        let light = min(max(evaluated, 0), 1)
        for row in 0..<3 {
          let product = Int32((matrix[row * 3 + channel] * light * Self.productOne).rounded())
          products[(channel * 256 + value) * 4 + row] = channel == 0 ? product &+ half : product
        }
      }
    }
    self.products = products

    // One output table serves all three channels: sRGB's curves are the same; refuse a target whose differ.
    let probes: [Float] = [0.02, 0.2, 0.5, 0.8]
    let sameCurves = targetCurves.dropFirst().allSatisfy { curve in
      probes.allSatisfy { cmsEvalToneCurveFloat(curve, $0) == cmsEvalToneCurveFloat(targetCurves[0], $0) }
    }
    guard sameCurves, let reversed = cmsReverseToneCurve(targetCurves[0]) else { return nil }
    defer { cmsFreeToneCurve(reversed) }
    // The reachable range: per lane, the sum of each channel's smallest (largest) entry.
    var lowest = Int32.max
    var highest = Int32.min
    for row in 0..<3 {
      let columns = (0..<3).map { channel in (0..<256).map { products[(channel * 256 + $0) * 4 + row] } }
      lowest = min(lowest, columns.reduce(0) { $0 &+ ($1.min() ?? 0) } &>> Self.shift)
      highest = max(highest, columns.reduce(0) { $0 &+ ($1.max() ?? 0) } &>> Self.shift)
    }
    lowest = min(lowest, 0)
    self.lowest = lowest
    encode = Self.monotoneTable(lowest...max(highest, Self.outputOne)) { index in
      let light = Float(Double(min(max(index, 0), Self.outputOne)) / Double(Self.outputOne))
      let value = Double(cmsEvalToneCurveFloat(reversed, light))
      return value.isFinite ? UInt8((min(max(value, 0), 1) * 255).rounded()) : 0
    }
  }

  /// `level(i)` for every `i` in `indices`, for a `level` that never decreases: a run whose two
  /// ends agree is filled without evaluating its inside, so ~2,500 evaluations of the curve
  /// make the ~70,000-entry table instead of one each (each a `pow`: 4 ms of a one-image
  /// process). An output curve is monotonic; should float noise make one step back inside a
  /// run, that entry takes the run's value, within the one level this transform allows.
  static func monotoneTable(_ indices: ClosedRange<Int32>, level: (Int32) -> UInt8) -> [UInt8] {
    let first = indices.lowerBound
    var table = [UInt8](repeating: 0, count: indices.count)
    table.withUnsafeMutableBufferPointer { table in
      func fill(_ lo: Int32, _ loLevel: UInt8, _ hi: Int32, _ hiLevel: UInt8) {
        if hi - lo <= 1 || loLevel == hiLevel {
          for i in lo...hi { table[Int(i - first)] = i == hi ? hiLevel : loLevel }
          return
        }
        let mid = lo + (hi - lo) / 2
        let midLevel = level(mid)
        fill(lo, loLevel, mid, midLevel)
        fill(mid, midLevel, hi, hiLevel)
      }
      fill(first, level(first), indices.upperBound, level(indices.upperBound))
    }
    return table
  }

  /// Converts every pixel of an RGB or RGBA `buffer` in place; alpha and row padding are untouched.
  func apply(_ buffer: inout PixelBuffer) {
    precondition(buffer.layout != .gray)
    let (width, height, stride, channels) = (
      buffer.width, buffer.height, buffer.rowBytes, buffer.layout.channels
    )
    products.withUnsafeBufferPointer { productTable in
      encode.withUnsafeBufferPointer { encodeTable in
        buffer.bytes.withUnsafeMutableBytes { bytes in
          guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
            let products = productTable.baseAddress, let encode = encodeTable.baseAddress
          else { return }
          Self.convert(
            base, width: width, height: height, stride: stride, channels: channels, products: products,
            encode: encode - Int(lowest))
        }
      }
    }
  }

  // The hot loop: raw pointers only, no allocation, no bounds checks, no branches per pixel. Each
  // table entry is four Int32 (target red, green, blue, unused), loaded and summed as one vector:
  // about 2.5 ns/pixel against 3.4 for the same sums in scalars. (Vectors are ~40× slower
  // unoptimised, so ImageCodecs is built with -O even in debug, like ImagePipeline.)
  @inline(__always)
  private static func convert(
    _ base: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int, channels: Int,
    products red: UnsafePointer<Int32>, encode: UnsafePointer<UInt8>
  ) {
    let table = UnsafeRawPointer(red)
    let entry = 4 * MemoryLayout<Int32>.stride
    let (green, blue) = (256 * entry, 512 * entry)
    for y in 0..<height {
      var p = base + y * stride
      for _ in 0..<width {
        let r = table.loadUnaligned(fromByteOffset: Int(p[0]) &* entry, as: SIMD4<Int32>.self)
        let g = table.loadUnaligned(fromByteOffset: green &+ Int(p[1]) &* entry, as: SIMD4<Int32>.self)
        let b = table.loadUnaligned(fromByteOffset: blue &+ Int(p[2]) &* entry, as: SIMD4<Int32>.self)
        let sum = (r &+ g &+ b) &>> shift
        p[0] = encode[Int(sum[0])]
        p[1] = encode[Int(sum[1])]
        p[2] = encode[Int(sum[2])]
        p += channels
      }
    }
  }

  /// The red, green and blue TRC tags (owned by the profile), or nil when lcms would not use the
  /// profile as a plain RGB matrix-shaper.
  private static func curves(_ profile: LCMSProfile) -> [OpaquePointer]? {
    let classes = [cmsSigDisplayClass, cmsSigInputClass, cmsSigOutputClass, cmsSigColorSpaceClass]
    guard cmsGetColorSpace(profile.raw) == cmsSigRgbData, cmsIsMatrixShaper(profile.raw) != 0,
      classes.contains(cmsGetDeviceClass(profile.raw))
    else { return nil }
    // lcms prefers any AToB/DToB (LUT) tag over the matrix and curves, whatever the intent asked.
    let lutTags = [
      cmsSigAToB0Tag, cmsSigAToB1Tag, cmsSigAToB2Tag, cmsSigDToB0Tag, cmsSigDToB1Tag, cmsSigDToB2Tag,
      cmsSigBToA0Tag, cmsSigBToA1Tag, cmsSigBToA2Tag, cmsSigBToD0Tag, cmsSigBToD1Tag, cmsSigBToD2Tag,
    ]
    guard !lutTags.contains(where: { cmsIsTag(profile.raw, $0) != 0 }) else { return nil }
    var curves: [OpaquePointer] = []
    for tag in [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag] {
      guard let curve = cmsReadTag(profile.raw, tag) else { return nil }
      curves.append(OpaquePointer(curve))
    }
    return curves
  }

  /// RGB → XYZ (D50) from the colorant tags, which ICC stores already adapted to D50; row-major.
  private static func rgbToXYZ(_ profile: LCMSProfile) -> [Double]? {
    var columns: [cmsCIEXYZ] = []
    for tag in [cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag] {
      guard let xyz = cmsReadTag(profile.raw, tag) else { return nil }
      columns.append(xyz.assumingMemoryBound(to: cmsCIEXYZ.self).pointee)
    }
    return [
      columns[0].X, columns[1].X, columns[2].X,
      columns[0].Y, columns[1].Y, columns[2].Y,
      columns[0].Z, columns[1].Z, columns[2].Z,
    ]
  }

  private static func multiply(_ a: [Double], _ b: [Double]) -> [Double] {
    (0..<9).map { i in
      let (row, column) = (i / 3, i % 3)
      return (0..<3).reduce(0.0) { $0 + a[row * 3 + $1] * b[$1 * 3 + column] }
    }
  }

  private static func inverse(_ m: [Double]) -> [Double]? {
    let cofactors: [Double] = [
      m[4] * m[8] - m[5] * m[7], m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
      m[5] * m[6] - m[3] * m[8], m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
      m[3] * m[7] - m[4] * m[6], m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3],
    ]
    let determinant = m[0] * cofactors[0] + m[1] * cofactors[3] + m[2] * cofactors[6]
    guard abs(determinant) > 1e-9 else { return nil }
    return cofactors.map { $0 / determinant }
  }
}
