import ImageCodecs

/// Reads the headers, checks them against the limits, decides the orientation and output size,
/// and records the colour the file declares — all before any pixel is decoded.
enum HeaderStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let header = try ImageHeader.read(c.input, format: c.format, limits: c.configuration.limits)
    try SecurityChecker.checkHeader(header, limits: c.configuration.limits)
    c.header = header
    c.orientation = OrientationPolicy.decide(for: header)
    c.displaySize = OrientationPolicy.displaySize(of: header, c.orientation)
    c.outputSize = Resampler.fitted(
      width: c.displaySize.width, height: c.displaySize.height, maxEdge: c.configuration.maxEdge)
    c.declaredColour = ColourDescription.declared(by: header)
    c.colourProfileDescription = c.declaredColour.summary
  }
}
