import ImageContainers

/// What the pipeline decides about an input from its headers alone, with no pixel decoded: what
/// `attachd inspect` prints.
public struct Inspection: Sendable {
  /// The headers, whatever the format.
  public var header: ImageHeader
  /// The source facts `process` would report.
  public var source: SourceInfo
  /// The size of the JPEG `process` would write.
  public var outputWidth: Int
  public var outputHeight: Int
  /// Whether a HEIF's irot/imir/clap are ignored (its EXIF orientation is applied instead).
  public var ignoresHEIFTransformations: Bool
}

extension Pipeline {
  /// Sniffs `input`, reads its headers and decides its orientation and output size, as `process`
  /// would, without decoding a pixel.
  public func inspect(_ input: [UInt8]) throws(PipelineError) -> Inspection {
    try input.withBytes { input throws(PipelineError) in try inspect(input) }
  }

  private func inspect(_ input: UnsafeRawBufferPointer) throws(PipelineError) -> Inspection {
    var c = PipelineContext(input: input, configuration: configuration)
    try SniffStep.run(&c)
    try HeaderStep.run(&c)
    let header = try c.requireHeader()
    return Inspection(
      header: header, source: Self.sourceInfo(c, header), outputWidth: c.outputSize.width,
      outputHeight: c.outputSize.height, ignoresHEIFTransformations: c.orientation.ignoreHEIFTransformations)
  }
}
