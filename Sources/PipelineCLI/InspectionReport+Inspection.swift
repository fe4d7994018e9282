import ImagePipeline

extension InspectionReport {
  /// The report of what the pipeline found in an input's headers.
  init(_ inspection: Inspection) {
    let source = inspection.source
    let heif = inspection.header.heif.map { info in
      HEIFReport(
        majorBrand: info.majorBrand.description, compatibleBrands: info.compatibleBrands.map(\.description),
        miaf: info.hasMIAFBrand, primaryItemType: info.primaryItemType?.description,
        rotationCCW: info.rotationCCW, mirrorAxis: info.mirrorAxis, items: info.itemCount,
        tiles: info.tileCount,
        auxiliaryImages: info.auxiliaryCount, thumbnails: info.thumbnailCount,
        ignoresTransformations: inspection.ignoresHEIFTransformations, plan: info.plan.map(Self.planReport))
    }
    self.init(
      format: source.format, bytes: source.bytes, stored: .init(width: source.width, height: source.height),
      display: .init(width: source.displayWidth, height: source.displayHeight),
      output: .init(width: inspection.outputWidth, height: inspection.outputHeight),
      orientation: .init(value: source.orientation, source: source.orientationSource.rawValue),
      colourProfile: source.colourProfile, metadataFound: source.metadataFound,
      wouldStrip: source.metadataStripped, heif: heif)
  }

  static func planReport(_ plan: HEIFDecodePlan) -> PlanReport {
    var fallback: String?
    if case .libheif(let reason) = plan.path { fallback = reason.description }
    let grid = plan.image.grid
    let codec = plan.image.codedItems.first?.hevc.map { hevc in
      let chroma = ["mono", "4:2:0", "4:2:2", "4:4:4"][hevc.chromaFormat]
      return "hevc \(chroma) \(hevc.bitDepthLuma)-bit"
    }
    let transforms = plan.transforms.map { transform -> String in
      switch transform {
      case .rotateCCW(let degrees): return "irot \(degrees)"
      case .mirrorVertical: return "imir 0"
      case .mirrorHorizontal: return "imir 1"
      case .cleanAperture(let clap):
        return "clap \(clap.widthN)/\(clap.widthD)x\(clap.heightN)/\(clap.heightD)"
      }
    }
    return PlanReport(
      path: plan.path == .hevc ? "hevc" : "libheif", fallbackReason: fallback,
      image: "\(plan.image.itemType) item \(plan.image.itemID)",
      codedSize: .init(width: plan.storedSize.width, height: plan.storedSize.height),
      tiles: grid?.tiles.count,
      tileSize: grid.map { .init(width: $0.tileSize.width, height: $0.tileSize.height) }, codec: codec,
      transforms: transforms,
      alpha: plan.alpha.map {
        "\($0.image.itemType) item \($0.image.itemID)" + ($0.premultiplied ? ", premultiplied" : "")
      },
      auxiliaries: plan.auxiliaries.map { "\($0.kind.rawValue) item \($0.itemID)" },
      toneMaps: plan.toneMaps.count,
      notes: plan.notes)
  }
}
