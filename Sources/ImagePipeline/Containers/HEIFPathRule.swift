import ImageContainers

/// Which decoder takes a HEIF file's primary image.
public enum HEIFDecodePath: Sendable, Equatable, CustomStringConvertible {
  /// Our fast path: the box reader's plan, HEVC tiles decoded by libavcodec into planes.
  case hevc
  /// libheif decodes the whole file (AVIF, and whatever the fast path declines), for this reason.
  case libheif(HEIFFallbackReason)

  public var description: String {
    switch self {
    case .hevc: return "hevc"
    case .libheif(let reason): return "libheif (\(reason))"
    }
  }
}

/// Why the HEVC fast path declined a file: a value to log, count and test.
public enum HEIFFallbackReason: Sendable, Equatable, CustomStringConvertible {
  /// The image (or a tile, or the alpha image) is not HEVC: `av01`, `iovl`, …
  case notHEVC(FourCC)
  /// An `hvc1` item's `hvcC` is missing, malformed, lacks VPS/SPS/PPS, or its SPS is unreadable.
  case hevcConfiguration(String)
  /// A bit depth other than 8 or 10, or luma and chroma depths that differ.
  case bitDepth(luma: Int, chroma: Int)
  /// The `hvcC` fields and its SPS disagree (chroma format or bit depth).
  case configurationMismatch
  /// Grid tiles with different chroma formats or bit depths.
  case tilesDiffer
  /// An essential property the fast path does not implement (libheif does).
  case essentialProperty(FourCC)
  /// An alpha image the fast path cannot pair with the colour image.
  case alpha(String)
  /// Grid tiles whose width or height is not a whole number of chroma samples: the next tile's
  /// chroma would start half a sample into the previous one's.
  case tileAlignment

  /// A stable snake_case code for logs and metrics.
  public var code: String {
    switch self {
    case .notHEVC: return "not_hevc"
    case .hevcConfiguration: return "hevc_configuration"
    case .bitDepth: return "bit_depth"
    case .configurationMismatch: return "configuration_mismatch"
    case .tilesDiffer: return "tiles_differ"
    case .essentialProperty: return "essential_property"
    case .alpha: return "alpha"
    case .tileAlignment: return "tile_alignment"
    }
  }

  public var description: String {
    switch self {
    case .notHEVC(let type): return "\(code): \(type)"
    case .hevcConfiguration(let why), .alpha(let why): return "\(code): \(why)"
    case .bitDepth(let luma, let chroma): return "\(code): \(luma)/\(chroma)"
    case .essentialProperty(let type): return "\(code): \(type)"
    case .configurationMismatch, .tilesDiffer, .tileAlignment: return code
    }
  }
}

/// The rule, in one place, for which files the HEVC fast path decodes:
/// - the image is an `hvc1` item, or a grid whose tiles are all `hvc1` (after following a
///   primary `iden`/`tmap` to its source);
/// - every `hvcC` is readable, holds a VPS, an SPS and a PPS, and its SPS can be read (the SPS
///   gives the size a tile decodes to, so geometry never rests on `ispe` alone) and agrees with
///   the record's chroma format and bit depths;
/// - 8- or 10-bit, luma and chroma alike; 4:2:0, 4:2:2, 4:4:4 or monochrome;
/// - all tiles of a grid share chroma format and bit depth (their sizes were already checked by
///   the plan reader: one size, covering the output), and a grid of several tiles across (down)
///   has tiles a whole number of chroma samples wide (high);
/// - no essential property the fast path does not implement, on the image, the items it derives
///   from, its tiles or its alpha image;
/// - an alpha image, when there is one, passes the same rules and has the colour image's size
///   (libheif drops an alpha of another size; the fast path leaves such files to it).
/// Everything else goes to libheif, with the first reason found.
public enum HEIFPathRule {
  public static func decide(_ plan: HEIFDecodePlan) -> HEIFDecodePath {
    if let property = plan.derivationProperties.first { return .libheif(.essentialProperty(property)) }
    if let reason = decline(plan.image) { return .libheif(reason) }
    if let alpha = plan.alpha {
      if let reason = decline(alpha.image) { return .libheif(.alpha("the alpha image: \(reason)")) }
      if !alpha.matchesImageSize {
        return .libheif(
          .alpha("the alpha image is \(alpha.image.expectedSize), the colour image \(plan.storedSize)"))
      }
    }
    return .hevc
  }

  /// Why the fast path cannot decode `image`, or nil when it can.
  static func decline(_ image: HEIFImagePlan) -> HEIFFallbackReason? {
    if case .other = image.content { return .notHEVC(image.itemType) }
    var first: HEVCSequence?
    for item in image.codedItems {
      guard item.itemType == FourCC("hvc1") else { return .notHEVC(item.itemType) }
      if let property = item.unknownEssentialProperties.first { return .essentialProperty(property) }
      guard let hevc = item.hevc, let sequence = hevc.sequence else {
        return .hevcConfiguration(item.hevcProblem ?? "no hvcC")
      }
      guard hevc.hasParameterSets else { return .hevcConfiguration("the hvcC lacks a VPS, SPS or PPS") }
      guard sequence.chromaFormat == hevc.chromaFormat, sequence.bitDepthLuma == hevc.bitDepthLuma,
        sequence.bitDepthChroma == hevc.bitDepthChroma
      else { return .configurationMismatch }
      guard [8, 10].contains(sequence.bitDepthLuma),
        sequence.bitDepthChroma == sequence.bitDepthLuma || sequence.chromaFormat == 0
      else { return .bitDepth(luma: sequence.bitDepthLuma, chroma: sequence.bitDepthChroma) }
      if let first {
        guard first.chromaFormat == sequence.chromaFormat, first.bitDepthLuma == sequence.bitDepthLuma else {
          return .tilesDiffer
        }
      } else {
        first = sequence
      }
    }
    if let grid = image.grid, let first {
      let (h, v) = first.chromaFormat == 1 ? (2, 2) : first.chromaFormat == 2 ? (2, 1) : (1, 1)
      if (grid.columns > 1 && grid.tileSize.width % h != 0)
        || (grid.rows > 1 && grid.tileSize.height % v != 0)
      {
        return .tileAlignment
      }
    }
    return image.codedItems.isEmpty ? .notHEVC(image.itemType) : nil
  }
}
