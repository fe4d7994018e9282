/// 8 × 8 transposes of Int16 blocks between "8 rows of n samples" and "n groups of 8 lanes", the
/// two layouts of the resampler's strips. Written with whole-vector interleaves, which LLVM
/// lowers to 24 `punpck` instructions per block even on baseline x86-64 (SSE2).
enum Transpose8 {
  /// Rows → lanes: `dst[i × 8 + r] = src[r × stride + i]` for r in 0..<8, i in 0..<n, n a
  /// multiple of 8.
  static func rowsToLanes(
    _ src: UnsafePointer<Int16>, stride: Int, _ dst: UnsafeMutablePointer<Int16>, count n: Int
  ) {
    precondition(n % 8 == 0)
    let s = UnsafeRawPointer(src)
    let d = UnsafeMutableRawPointer(dst)
    for i in Swift.stride(from: 0, to: n, by: 8) {
      let block = transpose(
        s.loadUnaligned(fromByteOffset: (0 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (1 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (2 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (3 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (4 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (5 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (6 * stride + i) * 2, as: SIMD8<Int16>.self),
        s.loadUnaligned(fromByteOffset: (7 * stride + i) * 2, as: SIMD8<Int16>.self))
      let o = d + i * 16
      o.storeBytes(of: block.0, toByteOffset: 0, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.1, toByteOffset: 16, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.2, toByteOffset: 32, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.3, toByteOffset: 48, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.4, toByteOffset: 64, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.5, toByteOffset: 80, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.6, toByteOffset: 96, as: SIMD8<Int16>.self)
      o.storeBytes(of: block.7, toByteOffset: 112, as: SIMD8<Int16>.self)
    }
  }

  /// Lanes → rows: `dst[r × stride + i] = src[i × 8 + r]` for r in 0..<8, i in 0..<n, n a
  /// multiple of 8.
  static func lanesToRows(
    _ src: UnsafePointer<Int16>, _ dst: UnsafeMutablePointer<Int16>, stride: Int, count n: Int
  ) {
    precondition(n % 8 == 0)
    let s = UnsafeRawPointer(src)
    let d = UnsafeMutableRawPointer(dst)
    for i in Swift.stride(from: 0, to: n, by: 8) {
      let b = s + i * 16
      let block = transpose(
        b.loadUnaligned(fromByteOffset: 0, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 16, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 32, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 48, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 64, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 80, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 96, as: SIMD8<Int16>.self),
        b.loadUnaligned(fromByteOffset: 112, as: SIMD8<Int16>.self))
      d.storeBytes(of: block.0, toByteOffset: (0 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.1, toByteOffset: (1 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.2, toByteOffset: (2 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.3, toByteOffset: (3 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.4, toByteOffset: (4 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.5, toByteOffset: (5 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.6, toByteOffset: (6 * stride + i) * 2, as: SIMD8<Int16>.self)
      d.storeBytes(of: block.7, toByteOffset: (7 * stride + i) * 2, as: SIMD8<Int16>.self)
    }
  }

  private typealias V = SIMD8<Int16>

  // Three rounds of interleaving at 16-, 32- and 64-bit granularity.
  @inline(__always)
  private static func transpose(_ r0: V, _ r1: V, _ r2: V, _ r3: V, _ r4: V, _ r5: V, _ r6: V, _ r7: V)
    -> (V, V, V, V, V, V, V, V)
  {
    let a0 = low16(r0, r1)
    let a1 = high16(r0, r1)
    let a2 = low16(r2, r3)
    let a3 = high16(r2, r3)
    let a4 = low16(r4, r5)
    let a5 = high16(r4, r5)
    let a6 = low16(r6, r7)
    let a7 = high16(r6, r7)
    let b0 = low32(a0, a2)
    let b1 = high32(a0, a2)
    let b2 = low32(a1, a3)
    let b3 = high32(a1, a3)
    let b4 = low32(a4, a6)
    let b5 = high32(a4, a6)
    let b6 = low32(a5, a7)
    let b7 = high32(a5, a7)
    return (
      low64(b0, b4), high64(b0, b4), low64(b1, b5), high64(b1, b5),
      low64(b2, b6), high64(b2, b6), low64(b3, b7), high64(b3, b7)
    )
  }

  @inline(__always) private static func low16(_ a: V, _ b: V) -> V {
    V(a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3])
  }
  @inline(__always) private static func high16(_ a: V, _ b: V) -> V {
    V(a[4], b[4], a[5], b[5], a[6], b[6], a[7], b[7])
  }
  @inline(__always) private static func low32(_ a: V, _ b: V) -> V {
    let (x, y) = (unsafeBitCast(a, to: SIMD4<Int32>.self), unsafeBitCast(b, to: SIMD4<Int32>.self))
    return unsafeBitCast(SIMD4(x[0], y[0], x[1], y[1]), to: V.self)
  }
  @inline(__always) private static func high32(_ a: V, _ b: V) -> V {
    let (x, y) = (unsafeBitCast(a, to: SIMD4<Int32>.self), unsafeBitCast(b, to: SIMD4<Int32>.self))
    return unsafeBitCast(SIMD4(x[2], y[2], x[3], y[3]), to: V.self)
  }
  @inline(__always) private static func low64(_ a: V, _ b: V) -> V {
    let (x, y) = (unsafeBitCast(a, to: SIMD2<Int64>.self), unsafeBitCast(b, to: SIMD2<Int64>.self))
    return unsafeBitCast(SIMD2(x[0], y[0]), to: V.self)
  }
  @inline(__always) private static func high64(_ a: V, _ b: V) -> V {
    let (x, y) = (unsafeBitCast(a, to: SIMD2<Int64>.self), unsafeBitCast(b, to: SIMD2<Int64>.self))
    return unsafeBitCast(SIMD2(x[1], y[1]), to: V.self)
  }
}
