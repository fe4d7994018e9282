import ImageCodecs
import ImageContainers

/// The lossless fast path: a Huffman-coded 8-bit YCbCr or gray JPEG that already fits, is sRGB
/// or untagged, and needs no rotation or one `tjTransform` does perfectly, is rewritten with
/// `tjTransform` + `TJXOPT_COPYNONE` (no metadata copied) instead of being decoded and re-encoded.
enum LosslessJPEGStep {
  /// The transform that makes this input's output losslessly, or nil when the standard path
  /// must run: the whole decision, from the headers alone (`Pipeline.route`).
  static func operation(for c: PipelineContext) -> JPEGCodec.Operation? {
    guard c.configuration.losslessJPEG, let header = c.header, let info = header.jpeg, isEligible(info, c)
    else { return nil }
    guard let codecInfo = try? JPEGCodec.readHeader(c.input) else { return nil }
    let operation = operation(for: c.orientation.apply)
    return JPEGCodec.isPerfect(operation, for: codecInfo) ? operation : nil
  }

  /// Rewrites the input with `operation`. Anything the transform refuses leaves no output, and
  /// the standard path then runs and reports properly. So does a rewrite that is not a whole
  /// clean JPEG: `tjTransform` copies a broken scan as it is (Scripts/fuzz-sandbox found a
  /// progressive JPEG whose rewrite ended early), and that is the input's fault (422 from the
  /// decoder), not a 500 from the final verification.
  static func run(_ c: inout PipelineContext, operation: JPEGCodec.Operation) {
    guard let output = try? JPEGCodec.transform(c.input, operation: operation, perfectOnly: true),
      (try? JPEGOutputVerifier.verify(output)) != nil
    else {
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
    switch c.declaredColour {
    case .untagged: return true
    case .icc: return c.colourProfileDescription?.hasPrefix("sRGB") == true
    case .nclx: return false
    }
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
