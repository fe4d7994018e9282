extension Pipeline {
  /// The inspection report for `input`: headers only, no pixel decoded.
  public func inspectReport(_ input: [UInt8]) throws(PipelineError) -> InspectionReport {
    var c = PipelineContext(input: input, configuration: configuration)
    try SniffStep.run(&c)
    try HeaderStep.run(&c)
    let header = try c.requireHeader()
    let source = Self.sourceInfo(c, header)
    let heif = header.heif.map { info in
      InspectionReport.HEIFReport(
        majorBrand: info.majorBrand.description, compatibleBrands: info.compatibleBrands.map(\.description),
        miaf: info.hasMIAFBrand, primaryItemType: info.primaryItemType?.description,
        rotationCCW: info.rotationCCW, mirrorAxis: info.mirrorAxis, items: info.itemCount,
        tiles: info.tileCount,
        auxiliaryImages: info.auxiliaryCount, thumbnails: info.thumbnailCount,
        ignoresTransformations: c.orientation.ignoreHEIFTransformations)
    }
    return InspectionReport(
      format: source.format, bytes: source.bytes, stored: .init(width: source.width, height: source.height),
      display: .init(width: source.displayWidth, height: source.displayHeight),
      output: .init(width: c.outputSize.width, height: c.outputSize.height),
      orientation: .init(value: source.orientation, source: source.orientationSource.rawValue),
      colourProfile: source.colourProfile, metadataFound: source.metadataFound,
      wouldStrip: source.metadataStripped, heif: heif)
  }
}
