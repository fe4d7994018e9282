import ImageCodecs

/// Reads the headers, checks them against the limits, decides the orientation and output size,
/// and finds the colour profile — all before any pixel is decoded.
enum HeaderStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let header = try ImageHeader.read(c.input, format: c.format, limits: c.configuration.limits)
    try SecurityChecker.checkHeader(header, limits: c.configuration.limits)
    c.header = header
    c.orientation = OrientationPolicy.decide(for: header)
    c.displaySize = OrientationPolicy.displaySize(of: header, c.orientation)
    c.outputSize = Resampler.fitted(
      width: c.displaySize.width, height: c.displaySize.height, maxEdge: c.configuration.maxEdge)
    c.iccProfile = header.iccProfile
    if case .png(let png) = header.container, let compressed = png.compressedICCProfile {
      // iCCP is zlib-compressed; inflate it with a hard cap (a profile is rarely over 1 MiB).
      c.iccProfile = try? Inflate.decompress(compressed[...], maxOutput: 4 << 20)
    }
    if let profile = c.iccProfile {
      c.colourProfileDescription =
        ColourTransform.describe(iccProfile: profile)?.description ?? "unreadable ICC"
    } else if let nclx = header.heif?.nclx {
      c.nclx = nclx
      c.colourProfileDescription = "nclx \(nclx.primaries)/\(nclx.transfer)/\(nclx.matrix)"
    }
  }
}
