private import CLCMS2

extension ColourTransform {
  /// Converts `buffer` in place from the colour space an nclx box describes to sRGB. BT.709/sRGB
  /// primaries with an sRGB or BT.709 transfer are left alone (close enough to sRGB that browsers
  /// treat them as such); PQ/HLG (HDR) and unknown code points are left alone with a reason.
  @discardableResult
  public static func toSRGB(_ buffer: inout PixelBuffer, nclx: NCLXColour) -> Outcome {
    switch transform(nclx: nclx, layout: buffer.layout) {
    case .success(let transform):
      transform.apply(&buffer)
      return .converted
    case .failure(let reason):
      return .unchanged(reason: reason.message)
    }
  }

  /// The shared transform from `nclx` to sRGB for `layout`, or why the pixels stay as they are.
  static func transform(nclx: NCLXColour, layout: PixelBuffer.Layout) -> Result<LCMSTransform, CodecError> {
    func unchanged(_ reason: String) -> Result<LCMSTransform, CodecError> {
      .failure(CodecError(.unsupported, codec: "nclx", reason))
    }
    guard layout != .gray else { return unchanged("nclx on gray pixels") }
    guard let primaries = NCLXPrimaries(nclx.colourPrimaries) else {
      return unchanged("unsupported nclx primaries \(nclx.colourPrimaries)")
    }
    guard let transfer = NCLXTransfer(nclx.transferCharacteristics) else {
      return unchanged("unsupported nclx transfer \(nclx.transferCharacteristics)")
    }
    if primaries == .bt709, transfer != .gamma22, transfer != .gamma28, transfer != .linear {
      return unchanged("nclx is sRGB-like")
    }
    // The key is not an ICC profile (those are ≥ 132 bytes), so the two never collide in the cache.
    let tag = [UInt8(ascii: "n"), UInt8(ascii: "c"), UInt8(ascii: "l"), UInt8(ascii: "x")]
    let key = TransformKey(
      profile: tag + [UInt8(primaries.rawValue), UInt8(transfer.rawValue)], layout: layout,
      intent: .perceptual, inverted: false)
    return cachedTransform(key, build: { profile(primaries, transfer) })
  }

  /// An lcms RGB profile for nclx primaries and transfer.
  private static func profile(_ primaries: NCLXPrimaries, _ transfer: NCLXTransfer) -> LCMSProfile? {
    let (p, white) = primaries.chromaticities
    let (type, params) = transfer.parametricCurve
    return LCMSProfile.rgb(primaries: p, white: white, curveType: type, curveParameters: params)
  }
}

extension LCMSProfile {
  /// An RGB matrix-shaper profile from chromaticities (R x, R y, G x, G y, B x, B y), a white
  /// point (x, y) and one lcms parametric tone curve for all three channels.
  static func rgb(
    primaries p: [Double], white: (Double, Double), curveType: Int32, curveParameters: [Double]
  ) -> LCMSProfile? {
    var whitePoint = cmsCIExyY(x: white.0, y: white.1, Y: 1)
    var triple = cmsCIExyYTRIPLE(
      Red: cmsCIExyY(x: p[0], y: p[1], Y: 1), Green: cmsCIExyY(x: p[2], y: p[3], Y: 1),
      Blue: cmsCIExyY(x: p[4], y: p[5], Y: 1))
    var params = curveParameters
    guard let curve = cmsBuildParametricToneCurve(nil, curveType, &params) else { return nil }
    defer { cmsFreeToneCurve(curve) }
    var curves: [OpaquePointer?] = [curve, curve, curve]
    return LCMSProfile(owning: cmsCreateRGBProfile(&whitePoint, &triple, &curves))
  }
}

/// nclx colour primaries we can build a profile for.
private enum NCLXPrimaries: Int {
  case bt709 = 1
  case bt470bg = 5
  case smpte170m = 6
  case bt2020 = 9
  case dciP3 = 11
  case displayP3 = 12

  init?(_ code: Int) {
    self.init(rawValue: code == 2 ? 1 : code)  // 2 = unspecified: assume sRGB/BT.709
  }

  /// (R x, R y, G x, G y, B x, B y) and the white point (x, y).
  var chromaticities: ([Double], (Double, Double)) {
    let d65 = (0.3127, 0.3290)
    switch self {
    case .bt709: return ([0.64, 0.33, 0.30, 0.60, 0.15, 0.06], d65)
    case .bt470bg: return ([0.64, 0.33, 0.29, 0.60, 0.15, 0.06], d65)
    case .smpte170m: return ([0.630, 0.340, 0.310, 0.595, 0.155, 0.070], d65)
    case .bt2020: return ([0.708, 0.292, 0.170, 0.797, 0.131, 0.046], d65)
    case .dciP3: return ([0.680, 0.320, 0.265, 0.690, 0.150, 0.060], (0.314, 0.351))
    case .displayP3: return ([0.680, 0.320, 0.265, 0.690, 0.150, 0.060], d65)
    }
  }
}

/// nclx transfer characteristics we can build a tone curve for (SDR only).
private enum NCLXTransfer: Int {
  case bt709 = 1
  case gamma22 = 4
  case gamma28 = 5
  case linear = 8
  case srgb = 13

  init?(_ code: Int) {
    switch code {
    case 1, 6, 14, 15: self = .bt709  // BT.709, BT.601, BT.2020 10/12-bit share one curve
    case 2: self = .srgb  // unspecified: assume sRGB
    default: self.init(rawValue: code)
    }
  }

  /// lcms parametric curve type and parameters (encoded value → linear light).
  var parametricCurve: (Int32, [Double]) {
    switch self {
    case .srgb: (4, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045])
    case .bt709: (4, [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081])
    case .gamma22: (1, [2.2, 0, 0, 0, 0])
    case .gamma28: (1, [2.8, 0, 0, 0, 0])
    case .linear: (1, [1, 0, 0, 0, 0])
    }
  }
}
