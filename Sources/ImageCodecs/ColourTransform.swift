private import CLCMS2
import Synchronization

/// Converts decoded pixels to sRGB with lcms2, from an embedded ICC profile or a HEIF nclx box.
///
/// Policy: the rendering intent is perceptual by default (identical to relative colorimetric for
/// the matrix-shaper RGB profiles phones and cameras write; it matters for LUT-based CMYK
/// profiles, where it matches Pillow/thumbor). A profile lcms cannot parse, or one whose colour
/// space does not match the pixels (a gray profile on RGB pixels), is ignored as browsers do: the
/// pixels are treated as sRGB and left unchanged, and the outcome says why (for logs). Alpha is
/// carried through untouched, so convert straight (not premultiplied) alpha, or flatten first.
/// Transforms are built once per (profile, format) and cached; they are created with
/// `cmsFLAGS_NOCACHE`, which makes one transform safe to use from several threads at once.
/// 8-bit RGB(A) from an RGB matrix-shaper profile (Display P3, Adobe RGB, every nclx) skips lcms's
/// per-pixel path for `MatrixShaperTransform` (~4× faster, within one level of lcms).
public enum ColourTransform {
  /// How input colours are mapped into sRGB.
  public enum Intent: Sendable {
    case perceptual, relativeColorimetric
  }

  /// What a conversion did.
  public enum Outcome: Sendable, Equatable {
    /// The pixels were converted to sRGB.
    case converted
    /// The pixels were left as they were, for the stated reason (log it; treat them as sRGB).
    case unchanged(reason: String)
  }

  /// The colour space an ICC profile describes.
  public enum ProfileColourSpace: Sendable, Equatable {
    case rgb, gray, cmyk, other
  }

  /// What an ICC profile is, for logs and the stored record; nil when lcms cannot parse it.
  public static func describe(iccProfile: [UInt8]) -> (description: String, colourSpace: ProfileColourSpace)?
  {
    guard let profile = LCMSProfile(iccProfile) else { return nil }
    return (profile.description, profile.colourSpace)
  }

  /// Converts `buffer` in place from the colour space of `iccProfile` to sRGB.
  @discardableResult
  public static func toSRGB(
    _ buffer: inout PixelBuffer, iccProfile: [UInt8], intent: Intent = .perceptual
  ) -> Outcome {
    let key = TransformKey(profile: iccProfile, layout: buffer.layout, intent: intent, inverted: false)
    let transform: LCMSTransform
    switch cachedTransform(key, build: { LCMSProfile(iccProfile) }) {
    case .success(let built): transform = built
    case .failure(let reason): return .unchanged(reason: reason.message)
    }
    transform.apply(&buffer)
    return .converted
  }

  /// The shared transform for `key`, built from `build()` on first use.
  static func cachedTransform(
    _ key: TransformKey, build: () -> LCMSProfile?
  ) -> Result<LCMSTransform, CodecError> {
    if let hit = cache.value(for: key) { return .success(hit) }
    guard let source = build() else {
      return .failure(CodecError(.corrupt, codec: "lcms", "unreadable ICC profile"))
    }
    let want: ProfileColourSpace =
      switch key.layout {
      case .gray: .gray
      case .rgb, .rgba: key.cmyk ? .cmyk : .rgb
      }
    guard source.colourSpace == want else {
      return .failure(
        CodecError(.unsupported, codec: "lcms", "\(source.colourSpace) profile on \(want) pixels"))
    }
    guard let transform = LCMSTransform(from: source, key: key) else {
      return .failure(CodecError(.unsupported, codec: "lcms", "cannot build a transform"))
    }
    cache.store(transform, for: key)
    return .success(transform)
  }

  // Real traffic has a handful of distinct profiles (Display P3, Adobe RGB …).
  private static let cache = SharedCache<TransformKey, LCMSTransform>(limit: 64)
}

/// Identifies one cached transform: the source profile's bytes (or an nclx encoding) and formats.
struct TransformKey: Hashable, Sendable {
  var profile: [UInt8]
  var layout: PixelBuffer.Layout
  var intent: ColourTransform.Intent
  /// Source is CMYK (four channels in, RGB out).
  var cmyk = false
  /// CMYK samples are stored inverted (Adobe).
  var inverted: Bool

  init(profile: [UInt8], layout: PixelBuffer.Layout, intent: ColourTransform.Intent, inverted: Bool) {
    self.profile = profile
    self.layout = layout
    self.intent = intent
    self.inverted = inverted
  }

  static func cmyk(profile: [UInt8], inverted: Bool) -> TransformKey {
    var key = TransformKey(profile: profile, layout: .rgb, intent: .perceptual, inverted: inverted)
    key.cmyk = true
    return key
  }
}

/// Owns one lcms profile handle; `deinit` closes it.
final class LCMSProfile {
  let raw: UnsafeMutableRawPointer

  init?(_ bytes: [UInt8]) {
    guard bytes.count >= 132, bytes.count <= Int(UInt32.max) else { return nil }
    guard let raw = bytes.withUnsafeBytes({ cmsOpenProfileFromMem($0.baseAddress, UInt32($0.count)) })
    else { return nil }
    self.raw = raw
  }

  init?(owning raw: UnsafeMutableRawPointer?) {
    guard let raw else { return nil }
    self.raw = raw
  }

  deinit { cmsCloseProfile(raw) }

  /// The sRGB profile lcms builds in.
  static func sRGB() -> LCMSProfile? { LCMSProfile(owning: cmsCreate_sRGBProfile()) }

  /// A D50 gray profile with the sRGB tone curve: the gray counterpart of sRGB.
  static func sRGBGray() -> LCMSProfile? {
    var params: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
    guard let curve = cmsBuildParametricToneCurve(nil, 4, &params) else { return nil }
    defer { cmsFreeToneCurve(curve) }
    return LCMSProfile(owning: cmsCreateGrayProfile(cmsD50_xyY(), curve))
  }

  var colourSpace: ColourTransform.ProfileColourSpace {
    switch cmsGetColorSpace(raw) {
    case cmsSigRgbData: .rgb
    case cmsSigGrayData: .gray
    case cmsSigCmykData: .cmyk
    default: .other
    }
  }

  var description: String {
    var text = [CChar](repeating: 0, count: 256)
    let n = cmsGetProfileInfoASCII(raw, cmsInfoDescription, "en", "US", &text, UInt32(text.count))
    guard n > 0 else { return "" }
    return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// Owns one lcms transform; `deinit` deletes it.
///
/// Where the matrix-shaper shortcut exists, lcms's own transform is only built when something
/// asks for it (the tests' reference): building it takes 3–10 ms for Display P3 → sRGB, which a
/// sandbox child, with its empty cache, paid on every image although it never used it.
// @unchecked: built with cmsFLAGS_NOCACHE, so cmsDoTransform keeps no state in the transform and
// may run on several threads at once; the handle is made once, under `built`'s lock, and never changed.
final class LCMSTransform: @unchecked Sendable {
  private let source: LCMSProfile
  private let target: LCMSProfile
  private let formats: (input: UInt32, output: UInt32, intent: UInt32, flags: UInt32)
  private let built = Mutex<UnsafeMutableRawPointer?>(nil)
  let inputChannels: Int
  let outputChannels: Int
  /// The fixed-point shortcut for RGB(A) matrix-shaper sources, used instead of lcms when present.
  let fastPath: MatrixShaperTransform?

  init?(from source: LCMSProfile, key: TransformKey) {
    let layout = key.layout
    guard let target = layout == .gray ? LCMSProfile.sRGBGray() : LCMSProfile.sRGB() else { return nil }
    let outFormat: UInt32 =
      switch layout {
      case .gray: CLCMS2_TYPE_GRAY_8()
      case .rgb: CLCMS2_TYPE_RGB_8()
      case .rgba: CLCMS2_TYPE_RGBA_8()
      }
    let inFormat: UInt32 =
      key.cmyk ? (key.inverted ? CLCMS2_TYPE_CMYK_8_REV() : CLCMS2_TYPE_CMYK_8()) : outFormat
    let intent: UInt32 =
      key.intent == .perceptual ? UInt32(INTENT_PERCEPTUAL) : UInt32(INTENT_RELATIVE_COLORIMETRIC)
    var flags = UInt32(cmsFLAGS_NOCACHE)
    if layout == .rgba { flags |= UInt32(cmsFLAGS_COPY_ALPHA) }
    self.source = source
    self.target = target
    self.formats = (inFormat, outFormat, intent, flags)
    self.inputChannels = key.cmyk ? 4 : layout.channels
    self.outputChannels = layout.channels
    self.fastPath = key.cmyk || layout == .gray ? nil : MatrixShaperTransform(source: source, target: target)
    // Without the shortcut lcms does the work: a profile it cannot build a transform for is
    // refused here, as before.
    if fastPath == nil && handle == nil { return nil }
  }

  deinit {
    if let raw = built.withLock({ $0 }) { cmsDeleteTransform(raw) }
  }

  /// Whether lcms's transform exists yet (tests).
  var lcmsIsBuilt: Bool { built.withLock { $0 != nil } }

  /// lcms's transform, built on first use; nil when lcms cannot build it.
  private var handle: UnsafeMutableRawPointer? {
    built.withLock { built in
      if built == nil {
        built = cmsCreateTransform(
          source.raw, formats.input, target.raw, formats.output, formats.intent, formats.flags)
      }
      return built
    }
  }

  /// Converts every row of `buffer` in place (same input and output size).
  func apply(_ buffer: inout PixelBuffer) {
    precondition(inputChannels == outputChannels && buffer.layout.channels == outputChannels)
    if let fastPath {
      fastPath.apply(&buffer)
    } else {
      applyWithLCMS(&buffer)
    }
  }

  /// `apply(_:)` through lcms itself, also where the fast path exists (the tests' reference).
  func applyWithLCMS(_ buffer: inout PixelBuffer) {
    precondition(inputChannels == outputChannels && buffer.layout.channels == outputChannels)
    let (width, height, stride) = (buffer.width, buffer.height, buffer.rowBytes)
    guard let raw = handle else { return }
    buffer.bytes.withUnsafeMutableBytes { bytes in
      guard let base = bytes.baseAddress else { return }
      cmsDoTransformLineStride(
        raw, base, base, UInt32(width), UInt32(height), UInt32(stride), UInt32(stride), 0, 0)
    }
  }

  /// Converts `source` rows (of `inputChannels`) into a new buffer of `layout`.
  func apply(
    _ source: UnsafeRawBufferPointer, width: Int, height: Int, sourceRowBytes: Int,
    layout: PixelBuffer.Layout
  ) -> PixelBuffer {
    let rowBytes = width * layout.channels
    // Only CMYK sources come here, which have no shortcut: `init` built the handle.
    guard let raw = handle else {
      preconditionFailure("no lcms transform for a conversion without a shortcut")
    }
    let bytes = [UInt8](unsafeUninitializedCapacity: rowBytes * height) { out, count in
      cmsDoTransformLineStride(
        raw, source.baseAddress, out.baseAddress, UInt32(width), UInt32(height), UInt32(sourceRowBytes),
        UInt32(rowBytes), 0, 0)
      count = rowBytes * height
    }
    return PixelBuffer(width: width, height: height, layout: layout, bytes: bytes)
  }
}
