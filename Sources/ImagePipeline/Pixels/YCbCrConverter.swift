import ImageCodecs

/// Y′CbCr planes to interleaved RGB for any matrix and range, in Swift SIMD.
///
/// The planes come from `ResizeStep`: chroma centred, at the luma size or half of it on an even
/// side. Each chroma sample is repeated over the luma samples it covers, as TurboJPEG's
/// `tjDecodeYUVPlanes` does (it turns fancy upsampling off), so the two agree on JFIF planes.
/// Arithmetic is fixed point with 13 fractional bits (16 × 16 → 32-bit products); the
/// coefficients' rounding moves a result by at most a hundredth of a level, so it stays within
/// one level of exact arithmetic. About 4 ms for a 2048 × 1536 4:2:0 image (release build), a
/// quarter of TurboJPEG's speed on JFIF planes: its AVX2 code does two rows and two columns
/// per chroma sample at once, which is why `MergePlanesStep` keeps it for JFIF (their outputs
/// were identical on the benchmark's noise planes).
enum YCbCrConverter {
  /// The conversion's constants for one matrix and range, scaled by 2¹³.
  struct Coefficients: Equatable {
    /// Luma black level (16 in video range) and the luma gain.
    var lumaOffset: Int16
    var lumaScale: Int16
    /// Chroma gains: red from Cr, green from Cb and Cr (negative), blue from Cb.
    var redCr: Int16
    var greenCb: Int16
    var greenCr: Int16
    var blueCb: Int16

    static let bits = 13

    init(matrix: YCbCrMatrix, range: YCbCrRange) {
      let exact = Self.exact(matrix: matrix, range: range)
      let one = Double(1 << Self.bits)
      func fixed(_ value: Double) -> Int16 { Int16((value * one).rounded()) }
      lumaOffset = range == .full ? 0 : 16
      lumaScale = fixed(exact.lumaScale)
      redCr = fixed(exact.redCr)
      greenCb = fixed(exact.greenCb)
      greenCr = fixed(exact.greenCr)
      blueCb = fixed(exact.blueCb)
    }

    /// The real-valued gains: R = s(Y − o) + rCr·Cr′, G = s(Y − o) + gCb·Cb′ + gCr·Cr′,
    /// B = s(Y − o) + bCb·Cb′, with Cb′ = Cb − 128 (BT.601/709/2020 all have this form).
    static func exact(
      matrix: YCbCrMatrix, range: YCbCrRange
    ) -> (lumaScale: Double, redCr: Double, greenCb: Double, greenCr: Double, blueCb: Double) {
      let (kr, kb) = matrix.coefficients
      let kg = 1 - kr - kb
      let (lumaScale, chromaScale) = range == .full ? (1.0, 1.0) : (255.0 / 219, 255.0 / 224)
      return (
        lumaScale, 2 * (1 - kr) * chromaScale, -2 * kb * (1 - kb) / kg * chromaScale,
        -2 * kr * (1 - kr) / kg * chromaScale, 2 * (1 - kb) * chromaScale
      )
    }
  }

  /// RGB pixels for `planes`, whose chroma is centred and subsampled by 1 or 2 on each side
  /// (covering every luma sample); any matrix and range.
  static func rgb(from planes: YCbCrPlanes) -> PixelBuffer {
    let (h, v) = planes.subsampling
    precondition(planes.siting == .centred, "YCbCrConverter: chroma must be centred")
    precondition([1, 2].contains(h) && [1, 2].contains(v), "YCbCrConverter: subsampling \(h)x\(v)")
    precondition(
      planes.cb.width * h >= planes.width && planes.cb.height * v >= planes.height,
      "YCbCrConverter: chroma does not cover the luma")
    let k = Coefficients(matrix: planes.matrix, range: planes.range)
    let (width, height) = (planes.width, planes.height)
    let rowBytes = width * 3
    let count = rowBytes * height
    // Two spare bytes: pixels are stored in pairs as 8 bytes, the last 2 overwritten next.
    let bytes = [UInt8](unsafeUninitializedCapacity: count + 2) { out, initialized in
      planes.luma.bytes.withUnsafeBufferPointer { yp in
        planes.cb.bytes.withUnsafeBufferPointer { cbp in
          planes.cr.bytes.withUnsafeBufferPointer { crp in
            guard let y0 = yp.baseAddress, let cb0 = cbp.baseAddress, let cr0 = crp.baseAddress,
              let dst = out.baseAddress
            else { return }
            for row in 0..<height {
              let chromaRow = row / v
              let line = Row(
                luma: y0 + row * planes.luma.rowBytes, cb: cb0 + chromaRow * planes.cb.rowBytes,
                cr: cr0 + chromaRow * planes.cr.rowBytes, out: dst + row * rowBytes)
              if h == 2 {
                convertRow(line, width: width, halfChroma: true, k)
              } else {
                convertRow(line, width: width, halfChroma: false, k)
              }
            }
          }
        }
      }
      initialized = count
    }
    return PixelBuffer(width: width, height: height, layout: .rgb, bytes: bytes)
  }

  private struct Row {
    var luma: UnsafePointer<UInt8>
    var cb: UnsafePointer<UInt8>
    var cr: UnsafePointer<UInt8>
    var out: UnsafeMutablePointer<UInt8>
  }

  // One row, 16 pixels per step, then a scalar tail. `halfChroma` is a constant at each call
  // site, so the chroma load folds to one form.
  @inline(__always)
  private static func convertRow(_ row: Row, width: Int, halfChroma: Bool, _ k: Coefficients) {
    let out = UnsafeMutableRawPointer(row.out)
    var x = 0
    while x + 16 <= width {
      let y = UnsafeRawPointer(row.luma + x).loadUnaligned(as: SIMD16<UInt8>.self)
      let cb: SIMD16<UInt8>
      let cr: SIMD16<UInt8>
      if halfChroma {
        cb = doubled(UnsafeRawPointer(row.cb + x / 2).loadUnaligned(as: SIMD8<UInt8>.self))
        cr = doubled(UnsafeRawPointer(row.cr + x / 2).loadUnaligned(as: SIMD8<UInt8>.self))
      } else {
        cb = UnsafeRawPointer(row.cb + x).loadUnaligned(as: SIMD16<UInt8>.self)
        cr = UnsafeRawPointer(row.cr + x).loadUnaligned(as: SIMD16<UInt8>.self)
      }
      store(convert(y.lowHalf, cb.lowHalf, cr.lowHalf, k), to: out + x * 3)
      store(convert(y.highHalf, cb.highHalf, cr.highHalf, k), to: out + x * 3 + 24)
      x += 16
    }
    while x < width {
      let c = halfChroma ? x / 2 : x
      let pixel = convertOne(row.luma[x], row.cb[c], row.cr[c], k)
      row.out[x * 3] = pixel.r
      row.out[x * 3 + 1] = pixel.g
      row.out[x * 3 + 2] = pixel.b
      x += 1
    }
  }

  // Each of 8 chroma samples twice: the 16 luma samples they cover.
  @inline(__always)
  private static func doubled(_ c: SIMD8<UInt8>) -> SIMD16<UInt8> {
    SIMD16(
      c[0], c[0], c[1], c[1], c[2], c[2], c[3], c[3], c[4], c[4], c[5], c[5], c[6], c[6], c[7], c[7])
  }

  // A 16 × 16 → 32-bit product per lane.
  @inline(__always)
  private static func product(_ a: SIMD8<Int16>, _ b: Int16) -> SIMD8<Int32> {
    SIMD8<Int32>(truncatingIfNeeded: a) &* SIMD8<Int32>(repeating: Int32(b))
  }

  // 8 pixels, each as the 6 bytes of two pixels in the low half of a 64-bit word (see `store`).
  @inline(__always)
  private static func convert(
    _ y: SIMD8<UInt8>, _ cb: SIMD8<UInt8>, _ cr: SIMD8<UInt8>, _ k: Coefficients
  ) -> SIMD4<UInt64> {
    let luma =
      product(SIMD8<Int16>(truncatingIfNeeded: y) &- k.lumaOffset, k.lumaScale)
      &+ SIMD8<Int32>(repeating: 1 << (Coefficients.bits - 1))
    let b = SIMD8<Int16>(truncatingIfNeeded: cb) &- 128
    let r = SIMD8<Int16>(truncatingIfNeeded: cr) &- 128
    let shift = SIMD8<Int32>(repeating: Int32(Coefficients.bits))
    func narrow(_ v: SIMD8<Int32>) -> SIMD8<Int16> {
      SIMD8<Int16>(truncatingIfNeeded: v &>> shift).clampedToByte
    }
    let red = narrow(luma &+ product(r, k.redCr))
    let green = narrow(luma &+ product(b, k.greenCb) &+ product(r, k.greenCr))
    let blue = narrow(luma &+ product(b, k.blueCb))
    let rg = SIMD8<UInt16>(truncatingIfNeeded: red | green &<< 8)
    let bx = SIMD8<UInt16>(truncatingIfNeeded: blue)
    let words = SIMD8<UInt32>(
      UInt32(rg[0]) | UInt32(bx[0]) << 16, UInt32(rg[1]) | UInt32(bx[1]) << 16,
      UInt32(rg[2]) | UInt32(bx[2]) << 16, UInt32(rg[3]) | UInt32(bx[3]) << 16,
      UInt32(rg[4]) | UInt32(bx[4]) << 16, UInt32(rg[5]) | UInt32(bx[5]) << 16,
      UInt32(rg[6]) | UInt32(bx[6]) << 16, UInt32(rg[7]) | UInt32(bx[7]) << 16)
    let pairs = unsafeBitCast(words, to: SIMD4<UInt64>.self)
    return (pairs & 0xFF_FFFF) | ((pairs &>> 32) &<< 24)
  }

  // 8 pixels as 4 stores of 8 bytes, 6 apart: each store's top 2 bytes are overwritten by the
  // next (the last one's spill into the next pixels, the next row, or the spare bytes).
  @inline(__always)
  private static func store(_ pairs: SIMD4<UInt64>, to out: UnsafeMutableRawPointer) {
    for i in 0..<4 { out.storeBytes(of: pairs[i].littleEndian, toByteOffset: i * 6, as: UInt64.self) }
  }

  /// One pixel with the same arithmetic (row tails, and the tests' view of a single sample).
  static func convertOne(
    _ y: UInt8, _ cb: UInt8, _ cr: UInt8, _ k: Coefficients
  ) -> (r: UInt8, g: UInt8, b: UInt8) {
    let half = Int32(1) << (Coefficients.bits - 1)
    let luma = (Int32(y) - Int32(k.lumaOffset)) * Int32(k.lumaScale) + half
    let b = Int32(cb) - 128
    let r = Int32(cr) - 128
    func clamp(_ v: Int32) -> UInt8 { UInt8(clamping: v >> Int32(Coefficients.bits)) }
    return (
      clamp(luma + r * Int32(k.redCr)), clamp(luma + b * Int32(k.greenCb) + r * Int32(k.greenCr)),
      clamp(luma + b * Int32(k.blueCb))
    )
  }
}
