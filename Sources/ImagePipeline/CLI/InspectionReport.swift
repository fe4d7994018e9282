import Foundation

/// The JSON `attachd inspect` prints: the source facts plus what the pipeline would produce.
public struct InspectionReport: Sendable, Encodable {
  struct Size: Encodable {
    let width: Int
    let height: Int
  }

  struct OrientationReport: Encodable {
    let value: Int
    let source: String
  }

  struct HEIFReport: Encodable {
    let majorBrand: String
    let compatibleBrands: [String]
    let miaf: Bool
    let primaryItemType: String?
    let rotationCCW: Int
    let mirrorAxis: Int?
    let items: Int
    let tiles: Int
    let auxiliaryImages: Int
    let thumbnails: Int
    let ignoresTransformations: Bool
  }

  let format: String
  let bytes: Int
  let stored: Size
  let display: Size
  let output: Size
  let orientation: OrientationReport
  let colourProfile: String?
  let metadataFound: [String]
  let wouldStrip: [String]
  let heif: HEIFReport?

  /// Pretty-printed JSON with sorted, snake_case keys.
  public var json: String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.keyEncodingStrategy = .convertToSnakeCase
    guard let data = try? encoder.encode(self) else { return "{}" }
    return String(decoding: data, as: UTF8.self)
  }
}

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
