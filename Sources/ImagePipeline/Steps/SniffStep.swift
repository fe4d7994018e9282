/// Checks the upload's size, then recognises its format from magic bytes alone.
enum SniffStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    try SecurityChecker.checkBytes(c.input.count, limits: c.configuration.limits)
    c.format = FormatSniffer.sniff(c.input)
    switch c.format {
    case .empty: throw .empty()
    case .avifSequence:
      throw PipelineError(.animatedUnsupported, "animated AVIF (image sequences) is not supported")
    case let format where !format.isSupported: throw .unsupported(format.displayName)
    default: break
    }
  }
}
