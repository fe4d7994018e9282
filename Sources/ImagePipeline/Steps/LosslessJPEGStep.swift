import ImageCodecs

/// The lossless fast path: a Huffman-coded 8-bit YCbCr or gray JPEG that already fits, is sRGB
/// or untagged, and needs no rotation or one `tjTransform` does perfectly, is rewritten with
/// `tjTransform` + `TJXOPT_COPYNONE` (no metadata copied) instead of being decoded and re-encoded.
enum LosslessJPEGStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard c.configuration.losslessJPEG, let header = c.header, let info = header.jpeg, isEligible(info, c)
    else { return }
    guard let codecInfo = try? JPEGCodec.readHeader(c.input) else { return }
    let operation = operation(for: c.orientation.apply)
    guard JPEGCodec.isPerfect(operation, for: codecInfo) else { return }
    // Anything the transform refuses falls through to the decode path, which reports properly.
    guard let output = try? JPEGCodec.transform(c.input, operation: operation, perfectOnly: true) else {
      return
    }
    c.output = output
    c.losslessTransform = true
  }

  static func isEligible(_ info: JPEGMarkerInfo, _ c: PipelineContext) -> Bool {
    guard info.precision == 8,
      info.frameMarker == 0xC0 || info.frameMarker == 0xC1 || info.frameMarker == 0xC2,
      info.components == 1 || info.components == 3,
      info.adobeTransform == nil || info.adobeTransform == 1,
      c.outputSize == c.displaySize, !info.iccProfileBroken
    else { return false }
    guard let profile = info.iccProfile else { return true }
    return ColourTransform.describe(iccProfile: profile)?.description.hasPrefix("sRGB") == true
  }

  static func operation(for orientation: Orientation) -> JPEGCodec.Operation {
    switch orientation {
    case .up: return .none
    case .upMirrored: return .hflip
    case .down: return .rot180
    case .downMirrored: return .vflip
    case .leftMirrored: return .transpose
    case .right: return .rot90
    case .rightMirrored: return .transverse
    case .left: return .rot270
    }
  }
}
