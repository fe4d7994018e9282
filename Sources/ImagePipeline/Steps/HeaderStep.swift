import ImageCodecs

/// Reads the headers, checks them against the limits, decides the orientation and output size,
/// and records the colour the file declares — all before any pixel is decoded.
enum HeaderStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    try check(&c)
    // ICC profiles are parsed (lcms2) and PNG's inflated (zlib) here: C on the file's bytes,
    // which `check` alone, run by the server before a decode, must not do.
    c.declaredColour = ColourDescription.declared(by: c.header!)
    c.colourProfileDescription = c.declaredColour.summary
  }

  /// The headers read and checked, orientation and output size decided: Swift only.
  static func check(_ c: inout PipelineContext) throws(PipelineError) {
    let header = try ImageHeader.read(c.input, format: c.format, limits: c.configuration.limits)
    try SecurityChecker.checkHeader(header, limits: c.configuration.limits)
    c.header = header
    c.source = SourceShape(isMonochrome: header.isMonochrome, isLosslessSource: header.isLosslessSource)
    c.orientation = OrientationPolicy.decide(for: header)
    c.displaySize = OrientationPolicy.displaySize(of: header, c.orientation)
    c.outputSize = Resampler.fitted(
      width: c.displaySize.width, height: c.displaySize.height, maxEdge: c.configuration.maxEdge)
  }
}
