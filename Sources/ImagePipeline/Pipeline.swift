import Foundation

/// Turns any accepted picture into a clean, upright, sRGB JPEG that fits `maxEdge`.
///
/// The work is an ordered list of small steps (imgproxy's `processing.go` shape), each a
/// function of the shared context, each testable alone. Pixel steps are skipped once the
/// lossless path has produced the output; `verify` always runs.
public struct Pipeline: Sendable {
  public let configuration: Configuration

  struct Step: Sendable {
    let name: String
    /// Whether the step still runs when the output already exists (lossless path).
    let afterOutput: Bool
    let run: @Sendable (inout PipelineContext) throws(PipelineError) -> Void
  }

  /// The steps, in order. Checks come before any pixel is decoded: bytes, then the headers
  /// (dimensions, pixel count, items, tiles, frames, text chunks), then the memory reservation.
  static let steps: [Step] = [
    Step(name: "sniff", afterOutput: false, run: SniffStep.run),
    Step(name: "header", afterOutput: false, run: HeaderStep.run),
    Step(name: "lossless-jpeg", afterOutput: false, run: LosslessJPEGStep.run),
    Step(name: "reserve-memory", afterOutput: false, run: ReserveMemoryStep.run),
    Step(name: "decode", afterOutput: false, run: DecodeStep.run),
    Step(name: "flatten-alpha", afterOutput: false, run: FlattenAlphaStep.run),
    Step(name: "resize", afterOutput: false, run: ResizeStep.run),
    Step(name: "orient", afterOutput: false, run: OrientStep.run),
    Step(name: "merge-planes", afterOutput: false, run: MergePlanesStep.run),
    Step(name: "colour", afterOutput: false, run: ColourStep.run),
    Step(name: "encode", afterOutput: false, run: EncodeStep.run),
    Step(name: "verify", afterOutput: true, run: VerifyStep.run),
  ]

  /// A pipeline with `configuration`; throws when a setting is out of range.
  public init(configuration: Configuration = Configuration()) throws(ConfigurationError) {
    try configuration.validate()
    self.configuration = configuration
  }

  /// Processes one upload. Same input and configuration → byte-identical output.
  public func process(_ input: [UInt8]) throws(PipelineError) -> ProcessedImage {
    var context = PipelineContext(input: input, configuration: configuration)
    var timings: [StageTiming] = []
    let clock = ContinuousClock()
    defer { context.reservation?.release() }
    for step in Self.steps where context.output == nil || step.afterOutput {
      let started = clock.now
      try step.run(&context)
      timings.append(StageTiming(stage: step.name, duration: clock.now - started))
    }
    guard let output = context.output, let header = context.header else {
      throw .internal("the pipeline produced no output")
    }
    return ProcessedImage(
      jpeg: output, width: context.outputSize.width, height: context.outputSize.height,
      source: Self.sourceInfo(context, header), losslessTransform: context.losslessTransform, timings: timings
    )
  }

  /// Processes one upload given as `Data`.
  public func process(_ input: Data) throws(PipelineError) -> ProcessedImage {
    try process([UInt8](input))
  }

  static func sourceInfo(_ c: PipelineContext, _ header: ImageHeader) -> SourceInfo {
    let found = header.metadata.names
    return SourceInfo(
      format: header.format.rawValue, width: header.width, height: header.height,
      displayWidth: c.displaySize.width, displayHeight: c.displaySize.height, bytes: c.input.count,
      orientation: c.orientation.reported.rawValue, orientationSource: c.orientation.source,
      colourProfile: c.colourProfileDescription, metadataFound: found, metadataStripped: found)
  }
}
