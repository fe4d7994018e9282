import ImageContainers

/// Why no decoder here can show a HEIF file: the plan reader's refusal, mapped to a
/// `PipelineError` by `ImageHeader`.
public struct HEIFRefusal: Error, Sendable, Equatable, CustomStringConvertible {
  public enum Kind: String, Sendable {
    /// An image sequence (`msf1`/`moov`) with no primary still image: `animated_unsupported`.
    case imageSequence = "animated_unsupported"
    /// A feature neither decoder implements (`pred`, an unknown essential property): `unsupported_format`.
    case unsupported = "unsupported_format"
    case corrupt
    /// Image data past the end of the file: `truncated`.
    case truncated
    /// More items or tiles than the limits allow: `too_many_items`.
    case tooManyItems = "too_many_items"
    /// Coded pictures larger than the pixel or edge limits (a small grid of huge tiles): `pixel_limit`.
    case pixelLimit = "pixel_limit"
  }

  public var kind: Kind
  public var reason: String

  init(_ kind: Kind, _ reason: String) {
    self.kind = kind
    self.reason = reason
  }

  public var description: String { "\(kind.rawValue): \(reason)" }
}

/// Builds the `HEIFDecodePlan` of a parsed file. Reads nothing twice and copies no image data;
/// refuses only what neither decoder can show, and leaves everything else to the path rule.
enum HEIFPlanReader {
  /// Deepest chain of derived items (`iden` of `iden` …) followed to a coded image.
  static let maxDerivationDepth = 8

  /// Item types libheif 1.15 decodes as a primary image.
  static let libheifImageTypes: Set<FourCC> = [
    FourCC("hvc1"), FourCC("av01"), FourCC("grid"), FourCC("iden"), FourCC("iovl"),
  ]

  /// Properties the HEVC path implements (or that describe without changing the pixels); an
  /// essential property outside this set sends the image to libheif or, outside
  /// `libheifProperties` too, refuses it.
  static let fastPathProperties: Set<FourCC> = [
    "ispe", "hvcC", "irot", "imir", "clap", "colr", "pixi", "auxC", "pasp", "clli", "mdcv",
  ].reduce(into: []) { $0.insert(fourCC($1)) }

  /// Properties libheif 1.15 parses and applies (or that AVIF decoders handle themselves).
  static let libheifProperties: Set<FourCC> = fastPathProperties.union(
    ["av1C", "a1op", "a1lx", "lsel"].map(fourCC))

  static let alphaURNs: Set<String> = [
    "urn:mpeg:hevc:2015:auxid:1", "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha", "urn:mpeg:avc:2015:auxid:1",
  ]
  static let depthURNs: Set<String> = [
    "urn:mpeg:hevc:2015:auxid:2", "urn:mpeg:mpegB:cicp:systems:auxiliary:depth",
  ]
  static let appleGainMapURN = "urn:com:apple:photo:2020:aux:hdrgainmap"

  static func fourCC(_ s: String) -> FourCC {
    let b = Array(s.utf8)
    return FourCC(b[0], b[1], b[2], b[3])
  }

  /// The plan of `file`'s primary image, or why no decoder can show it.
  static func plan(_ file: HEIFFile, limits: Limits) -> Result<HEIFDecodePlan, HEIFRefusal> {
    do throws(HEIFRefusal) {
      return .success(try makePlan(file, limits: limits))
    } catch {
      return .failure(error)
    }
  }

  private static func makePlan(_ file: HEIFFile, limits: Limits) throws(HEIFRefusal) -> HEIFDecodePlan {
    guard let primary = file.primaryItemID else {
      throw HEIFRefusal(.corrupt, "the HEIF file has no primary image")
    }
    guard let primaryItem = file.items[primary] else {
      throw HEIFRefusal(.corrupt, "the primary item \(primary) is not described in iinf")
    }
    // A cut upload loses the items stored last, often not the primary's: any item whose data
    // lies past the end means the file is incomplete (libheif 1.15 reads every item and agrees).
    for id in file.itemOrder where file.extents(of: id) == .failure(.outOfBounds) {
      throw HEIFRefusal(.truncated, "the data of item \(id) lies past the end of the file")
    }
    var notes: [String] = []
    if primaryItem.isHidden { notes.append("the primary item is marked hidden") }

    // Follow derivations (`iden`, `tmap`) to the image whose pixels are decoded.
    var chain: [UInt32] = []
    var id = primary
    while true {
      guard !chain.contains(id) else { throw HEIFRefusal(.corrupt, "item \(id) derives from itself") }
      guard chain.count < maxDerivationDepth else {
        throw HEIFRefusal(.unsupported, "the primary image is derived over \(maxDerivationDepth) times")
      }
      chain.append(id)
      guard let item = file.items[id] else {
        throw HEIFRefusal(.corrupt, "item \(id) is referenced but not described")
      }
      switch item.type {
      case FourCC("pred"):
        throw HEIFRefusal(.unsupported, "predictively coded HEIF images (pred) are not supported")
      case FourCC("iden"):
        let sources = file.references(FourCC("dimg"), from: id)
        guard sources.count == 1 else {
          throw HEIFRefusal(.corrupt, "the iden item \(id) derives from \(sources.count) images, not one")
        }
        id = sources[0]
        continue
      case FourCC("tmap"):
        // ISO 21496-1: the base image is the first input; a reader without HDR shows it.
        guard let base = file.references(FourCC("dimg"), from: id).first else {
          throw HEIFRefusal(.corrupt, "the tmap item \(id) has no base image")
        }
        notes.append("the primary is a tone-map item; its base image \(base) is decoded")
        id = base
        continue
      default:
        break
      }
      break
    }
    let source = id
    for item in chain { try checkEssential(file, item) }

    let image = try imagePlan(file, source, limits: limits, notes: &notes)
    // The source's transforms first, then each deriving item's, the primary's last.
    var transforms: [HEIFTransform] = []
    for item in chain.reversed() { transforms += try self.transforms(file, item) }

    try checkCleanApertures(transforms, size: image.expectedSize)

    var colour: [HEIFBoxInfo.Colour] = []
    for item in chain + [image.codedItems.first?.itemID].compactMap({ $0 }) where colour.isEmpty {
      colour = file.properties.of(item).filter { $0.type == FourCC("colr") }.compactMap {
        HEIFBoxReader.colour(ByteReader(file.reader.bytes, limit: $0.end), $0)
      }
    }
    var bits: [Int]?
    for item in chain + [image.codedItems.first?.itemID].compactMap({ $0 }) where bits == nil {
      bits = pixi(file, item)
    }

    let alpha = try alphaPlan(file, chain: chain, image: image, limits: limits, notes: &notes)
    for plan in [image] + (alpha.map { [$0.image] } ?? []) { try checkCodedArea(plan, limits: limits) }
    let plan = HEIFDecodePlan(
      primaryItemID: primary, primaryItemType: primaryItem.type, image: image, transforms: transforms,
      colour: colour, bitsPerChannel: bits, alpha: alpha, auxiliaries: auxiliaries(file, chain: chain),
      toneMaps: chain.flatMap { target in
        file.items(referencing: target, as: FourCC("dimg")).filter { file.items[$0]?.type == FourCC("tmap") }
      },
      thumbnails: file.items(referencing: primary, as: FourCC("thmb")).map {
        HEIFThumbnail(itemID: $0, itemType: file.items[$0]?.type ?? FourCC(0, 0, 0, 0), ispe: ispe(file, $0))
      },
      path: .hevc, notes: notes)
    if plan.displaySize.width <= 0 || plan.displaySize.height <= 0 {
      throw HEIFRefusal(.corrupt, "the primary image has no size (\(plan.storedSize))")
    }
    var decided = plan
    decided.derivationProperties = chain.flatMap { unknownEssential(file, $0) }
    decided.path = HEIFPathRule.decide(plan)
    return decided
  }

  /// Refuses a `clap` that keeps nothing of the image it applies to (libheif: "invalid clean
  /// aperture"), following the size through the transforms before it.
  static func checkCleanApertures(_ transforms: [HEIFTransform], size: HEIFSize) throws(HEIFRefusal) {
    var shown = (width: size.width, height: size.height)
    for transform in transforms {
      switch transform {
      case .rotateCCW(let degrees) where degrees % 180 == 90:
        shown = (shown.height, shown.width)
      case .cleanAperture(let clap):
        guard let kept = clap.rectangle(width: shown.width, height: shown.height) else {
          throw HEIFRefusal(
            .corrupt, "the clean aperture lies outside the \(shown.width)x\(shown.height) image")
        }
        shown = (kept.width, kept.height)
      default:
        break
      }
    }
  }

  /// Refuses an image whose coded pictures add up to more than the pixel limit, or one of them
  /// wider or taller than the edge limit: what a decoder allocates is the coded size, which a
  /// grid's output size does not bound (one tile of 60000×60000 can make a 1×1 output).
  static func checkCodedArea(_ image: HEIFImagePlan, limits: Limits) throws(HEIFRefusal) {
    var total = 0
    for item in image.codedItems {
      let size = item.expectedSize
      guard size.width <= limits.maxDimension, size.height <= limits.maxDimension else {
        throw HEIFRefusal(
          .pixelLimit, "the image is coded as \(size), over the \(limits.maxDimension)-pixel edge limit")
      }
      total += size.width * size.height
      guard total <= limits.maxPixels else {
        throw HEIFRefusal(
          .pixelLimit,
          "the image is coded in \(total / 1_000_000)+ MP, over the \(limits.maxPixels / 1_000_000) MP limit")
      }
    }
  }

  /// Refuses an item with an essential property that neither decoder implements.
  static func checkEssential(_ file: HEIFFile, _ item: UInt32) throws(HEIFRefusal) {
    if file.properties.hasDanglingAssociation(item) {
      throw HEIFRefusal(.corrupt, "item \(item) is associated with a property that does not exist")
    }
    for (box, essential) in file.properties.associated(with: item)
    where essential && !libheifProperties.contains(box.type) {
      throw HEIFRefusal(.unsupported, "item \(item) needs the property \(box.type), which is not implemented")
    }
  }

  /// Essential properties of `item` the HEVC path does not implement.
  static func unknownEssential(_ file: HEIFFile, _ item: UInt32) -> [FourCC] {
    file.properties.associated(with: item).filter {
      $0.essential && !fastPathProperties.contains($0.box.type)
    }
    .map(\.box.type)
  }

  /// `irot`, `imir` and `clap` of `item` in `ipma` order.
  static func transforms(_ file: HEIFFile, _ item: UInt32) throws(HEIFRefusal) -> [HEIFTransform] {
    var result: [HEIFTransform] = []
    for box in file.properties.of(item) {
      let b = ByteReader(file.reader.bytes, limit: box.end)
      switch box.type {
      case FourCC("irot"):
        guard let angle = b.u8(box.body) else { throw HEIFRefusal(.corrupt, "irot is empty") }
        result.append(.rotateCCW(Int(angle & 3) * 90))
      case FourCC("imir"):
        guard let axis = b.u8(box.body) else { throw HEIFRefusal(.corrupt, "imir is empty") }
        result.append(axis & 1 == 0 ? .mirrorVertical : .mirrorHorizontal)
      case FourCC("clap"):
        guard let wN = b.u32(box.body), let wD = b.u32(box.body + 4), let hN = b.u32(box.body + 8),
          let hD = b.u32(box.body + 12), let xN = b.u32(box.body + 16), let xD = b.u32(box.body + 20),
          let yN = b.u32(box.body + 24), let yD = b.u32(box.body + 28)
        else { throw HEIFRefusal(.corrupt, "clap is shorter than its eight fields") }
        let clap = HEIFCleanAperture(
          widthN: wN, widthD: wD, heightN: hN, heightD: hD, horizontalOffsetN: Int32(bitPattern: xN),
          horizontalOffsetD: xD, verticalOffsetN: Int32(bitPattern: yN), verticalOffsetD: yD)
        guard wD > 0, hD > 0, xD > 0, yD > 0, wN > 0, hN > 0 else {
          throw HEIFRefusal(.corrupt, "clap has a zero numerator or denominator")
        }
        result.append(.cleanAperture(clap))
      default:
        break
      }
    }
    return result
  }

  static func ispe(_ file: HEIFFile, _ item: UInt32) -> HEIFSize? {
    guard let box = file.properties.first(FourCC("ispe"), of: item) else { return nil }
    let b = ByteReader(file.reader.bytes, limit: box.end)
    guard let w = b.u32(box.body + 4), let h = b.u32(box.body + 8) else { return nil }
    return HEIFSize(width: Int(w), height: Int(h))
  }

  static func pixi(_ file: HEIFFile, _ item: UInt32) -> [Int]? {
    guard let box = file.properties.first(FourCC("pixi"), of: item) else { return nil }
    let b = ByteReader(file.reader.bytes, limit: box.end)
    guard let count = b.u8(box.body + 4), count > 0 else { return nil }
    var depths: [Int] = []
    for i in 0..<Int(count) {
      guard let depth = b.u8(box.body + 5 + i) else { return nil }
      depths.append(Int(depth))
    }
    return depths
  }

  /// The alpha auxiliary of the displayed image: an `auxl` to the primary (or to the image it
  /// derives from) whose `auxC` names alpha.
  static func alphaPlan(
    _ file: HEIFFile, chain: [UInt32], image: HEIFImagePlan, limits: Limits, notes: inout [String]
  ) throws(HEIFRefusal) -> HEIFAlphaPlan? {
    for target in chain.reversed() {
      for candidate in file.items(referencing: target, as: FourCC("auxl")) where !chain.contains(candidate) {
        guard let urn = file.properties.auxiliaryType(of: candidate, file.reader), alphaURNs.contains(urn)
        else {
          continue
        }
        try checkEssential(file, candidate)
        let alpha = try imagePlan(file, candidate, limits: limits, notes: &notes)
        let premultiplied =
          file.references(FourCC("prem"), from: target).contains(candidate)
          || file.references(FourCC("prem"), from: chain[0]).contains(candidate)
        return HEIFAlphaPlan(
          image: alpha, premultiplied: premultiplied,
          matchesImageSize: alpha.expectedSize == image.expectedSize)
      }
    }
    return nil
  }

  /// Auxiliary images of the displayed image other than alpha.
  static func auxiliaries(_ file: HEIFFile, chain: [UInt32]) -> [HEIFAuxiliaryImage] {
    var result: [HEIFAuxiliaryImage] = []
    for target in chain {
      for id in file.items(referencing: target, as: FourCC("auxl"))
      where !result.contains(where: { $0.itemID == id }) {
        let urn = file.properties.auxiliaryType(of: id, file.reader) ?? ""
        guard !alphaURNs.contains(urn) else { continue }
        let kind: HEIFAuxiliaryImage.Kind =
          depthURNs.contains(urn) ? .depth : urn == appleGainMapURN ? .appleHDRGainMap : .other
        result.append(
          HEIFAuxiliaryImage(
            itemID: id, itemType: file.items[id]?.type ?? FourCC(0, 0, 0, 0), kind: kind, urn: urn,
            ispe: ispe(file, id)))
      }
    }
    return result
  }
}
