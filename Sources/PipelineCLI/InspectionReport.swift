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
    let plan: PlanReport?
  }

  /// What the HEIF reader planned for the primary image and which decoder takes it.
  struct PlanReport: Encodable {
    let path: String
    let fallbackReason: String?
    let image: String
    let codedSize: Size
    let tiles: Int?
    let tileSize: Size?
    let codec: String?
    let transforms: [String]
    let alpha: String?
    let auxiliaries: [String]
    let toneMaps: Int
    let notes: [String]
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
