import ImageContainers

/// What a HEIF/AVIF file's boxes say about its primary image, read before any decoding.
public struct HEIFBoxInfo: Sendable {
  /// HEIF `colr` box contents of the primary image.
  public enum Colour: Sendable, Equatable {
    case nclx(primaries: Int, transfer: Int, matrix: Int, fullRange: Bool)
    case icc([UInt8])
  }

  public var majorBrand = FourCC(0, 0, 0, 0)
  public var compatibleBrands: [FourCC] = []
  public var primaryItemID: UInt32?
  /// `hvc1`, `av01`, `grid`, `iden`, `iovl`, …
  public var primaryItemType: FourCC?
  /// Items listed in `iinf`.
  public var itemCount = 0
  /// Stored size of the primary image (its `ispe`, or its source's coded size when it has none),
  /// before clap/irot/imir. `plan.storedSize` is the size decoders produce.
  public var width = 0
  public var height = 0
  /// Counter-clockwise rotation of the primary in degrees (0, 90, 180, 270) from `irot`.
  public var rotationCCW = 0
  /// Mirror axis of the primary from `imir` (0 = vertical axis, 1 = horizontal axis).
  public var mirrorAxis: Int?
  /// Clean-aperture size of the primary (`clap`), when present.
  public var cleanAperture: (width: Int, height: Int)?
  public var colour: [Colour] = []
  /// Bits per channel from `pixi` (first channel), when present.
  public var bitDepth: Int?
  /// Tiles of a `grid` primary (its `dimg` references).
  public var tileCount = 0
  /// Auxiliary images (alpha, depth, gain maps) referring to the primary.
  public var auxiliaryCount = 0
  public var hasAlpha = false
  public var thumbnailCount = 0
  /// EXIF of the primary (its `cdsc` Exif item), when present and readable.
  public var exif: EXIFInfo?
  public var hasXMP = false
  /// Whether the file has a `moov` box (an image sequence or a video track).
  public var hasMovie = false
  /// Offsets of the type field of `iref` entries of type `auxl`/`cdsc` with more than one target.
  public var multiTargetReferenceOffsets: [Int] = []
  public var metadata = MetadataInventory()
  /// How to decode the primary image, when the reader could plan it.
  public var plan: HEIFDecodePlan?
  /// Why no decoder can show the file, when the reader refused it (then `plan` is nil).
  public var refusal: HEIFRefusal?
  /// Further four-character renames the libheif path needs (see `HEIFReferencePatch`).
  public var libheifRenames: [HEIFReferencePatch.Rename] = []

  /// Whether `miaf` is the major or a compatible brand.
  public var hasMIAFBrand: Bool {
    let miaf = FourCC("miaf")
    return majorBrand == miaf || compatibleBrands.contains(miaf)
  }

  /// Whether the primary is rotated or mirrored (by the plan's transforms when there is a plan:
  /// those of an `iden` and its source; else by its own `irot`/`imir`).
  public var hasRotationOrMirror: Bool {
    guard let plan else { return rotationCCW != 0 || mirrorAxis != nil }
    return plan.transforms.contains { transform in
      switch transform {
      case .rotateCCW(let degrees): return degrees % 360 != 0
      case .mirrorHorizontal, .mirrorVertical: return true
      case .cleanAperture: return false
      }
    }
  }

  /// The orientation HEIF's transforms amount to, as an EXIF orientation.
  var transformOrientation: Orientation {
    guard let plan else { return Orientation(heifRotationCCW: rotationCCW, mirrorAxis: mirrorAxis) }
    return plan.geometry(width: plan.storedSize.width, height: plan.storedSize.height).orientation
  }

  public var iccProfile: [UInt8]? {
    for case .icc(let profile) in colour { return profile }
    return nil
  }

  public var nclx: (primaries: Int, transfer: Int, matrix: Int, fullRange: Bool)? {
    for case .nclx(let p, let t, let m, let f) in colour { return (p, t, m, f) }
    return nil
  }

  /// Size after clap, irot and imir (what libheif returns with transformations applied): the
  /// plan's display size, which follows the coded size and every transform in order; without a
  /// plan, `ispe` with the integer clap size and irot.
  public var transformedSize: (width: Int, height: Int) {
    if let plan { return (plan.displaySize.width, plan.displaySize.height) }
    let (w, h) = cleanAperture ?? (width, height)
    return rotationCCW % 180 == 90 ? (h, w) : (w, h)
  }
}
