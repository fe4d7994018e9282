/// The colour space of RGB samples: an ICC profile, an nclx (H.273) description, or nothing,
/// in which case the samples are taken to be sRGB, as browsers take untagged images.
///
/// The one colour type between decoders and the colour conversion: whatever a container
/// declares (JPEG APP2, PNG iCCP, WebP ICCP, HEIF `colr`) or a decoder reports ends up as one
/// of these. An ICC profile wins over nclx when a file has both (libheif and browsers agree).
public enum ColourDescription: Sendable, Equatable {
  /// An embedded ICC profile's bytes.
  case icc([UInt8])
  /// H.273 code points (HEIF/AVIF `colr` of type nclx, or the coded stream's VUI).
  case nclx(NCLXColour)
  /// No description: the samples are treated as sRGB.
  case untagged

  /// The ICC profile, when this is one.
  public var iccProfile: [UInt8]? {
    if case .icc(let profile) = self { return profile }
    return nil
  }

  /// The nclx description, when this is one.
  public var nclx: NCLXColour? {
    if case .nclx(let nclx) = self { return nclx }
    return nil
  }

  /// What the record and `inspect` call it: the ICC profile's own description (`Display P3`),
  /// `unreadable ICC`, `nclx P/T/M` by code point, or nil when untagged.
  public var summary: String? {
    switch self {
    case .icc(let profile):
      ColourTransform.describe(iccProfile: profile)?.description ?? "unreadable ICC"
    case .nclx(let nclx):
      "nclx \(nclx.colourPrimaries)/\(nclx.transferCharacteristics)/\(nclx.matrixCoefficients)"
    case .untagged: nil
    }
  }
}

extension ColourTransform {
  /// Converts `buffer` in place from `colour` to sRGB; untagged pixels are left as they are.
  /// A profile or nclx that cannot be used leaves the pixels unchanged too (see `Outcome`).
  @discardableResult
  public static func toSRGB(_ buffer: inout PixelBuffer, from colour: ColourDescription) -> Outcome {
    switch colour {
    case .icc(let profile): toSRGB(&buffer, iccProfile: profile)
    case .nclx(let nclx): toSRGB(&buffer, nclx: nclx)
    case .untagged: .unchanged(reason: "untagged: treated as sRGB")
    }
  }
}
