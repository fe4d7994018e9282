/// Where the orientation of an output came from.
public enum OrientationSource: String, Sendable, Codable {
  /// EXIF IFD0 Orientation (JPEG APP1, PNG `eXIf`, WebP `EXIF`, or HEIF without `miaf`).
  case exif
  /// HEIF `irot`/`imir`, applied by libheif.
  case heifTransforms = "heif-transforms"
  /// No orientation information: the stored pixels are upright.
  case none
}

/// How one input is to be made upright (issue 3, finding 2).
struct OrientationDecision: Sendable, Equatable {
  /// What the pipeline itself applies after decoding (libheif applies HEIF transforms itself).
  var apply: Orientation
  /// The orientation reported to users: the EXIF value, or HEIF transforms as an EXIF value.
  var reported: Orientation
  var source: OrientationSource
  /// Whether libheif must decode with `ignore_transformations` (EXIF wins over `irot`/`imir`).
  var ignoreHEIFTransformations: Bool
}

/// The orientation policy:
/// - JPEG, PNG `eXIf`, WebP `EXIF`: the EXIF IFD0 Orientation (values outside 1…8 are 1; XMP
///   orientation is ignored).
/// - HEIF/AVIF with the `miaf` brand: `irot`/`imir` only (the MIAF rule), never EXIF as well —
///   iPhones write both, and applying both rotates twice.
/// - HEIF/AVIF without `miaf` that carries an EXIF Orientation: decoded with transformations
///   ignored, then the EXIF Orientation is applied (iOS 11 files have EXIF 6 and no irot; the
///   Nokia 8.3 writes a wrong irot with EXIF 1).
/// - otherwise `irot`/`imir`.
enum OrientationPolicy {
  static func decide(for header: ImageHeader) -> OrientationDecision {
    if let heif = header.heif {
      if !heif.hasMIAFBrand, let exif = heif.exif, exif.rawOrientation != nil {
        return OrientationDecision(
          apply: exif.orientation, reported: exif.orientation, source: .exif, ignoreHEIFTransformations: true)
      }
      let transforms = heif.transformOrientation
      return OrientationDecision(
        apply: .up, reported: transforms, source: heif.hasRotationOrMirror ? .heifTransforms : .none,
        ignoreHEIFTransformations: false)
    }
    if let exif = header.exif, exif.rawOrientation != nil {
      return OrientationDecision(
        apply: exif.orientation, reported: exif.orientation, source: .exif, ignoreHEIFTransformations: false)
    }
    return OrientationDecision(apply: .up, reported: .up, source: .none, ignoreHEIFTransformations: false)
  }

  /// The displayed size of the input under `decision`.
  static func displaySize(of header: ImageHeader, _ decision: OrientationDecision) -> (
    width: Int, height: Int
  ) {
    if let heif = header.heif, !decision.ignoreHEIFTransformations {
      return heif.transformedSize
    }
    return decision.apply.displaySize(width: header.width, height: header.height)
  }
}
