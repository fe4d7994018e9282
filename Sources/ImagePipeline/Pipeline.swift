import Foundation
import ImageCodecs
import ImageContainers

/// Turns any accepted picture into a clean, upright, sRGB JPEG that fits `maxEdge`.
///
/// The work is ordered lists of small steps (imgproxy's `processing.go` shape), each a function
/// of the shared context, each testable alone. The headers are read and checked first; then
/// `route` decides, once and explicitly, whether the standard decode-and-encode path runs or
/// the lossless JPEG rewrite (imgproxy's `shouldSkipStandardProcessing`); `verify` closes
/// either. Before every step the run checks its caller's cancellation and its deadline
/// (imgproxy's `pipeline.go` checks its deadline after each step), and so do decoders between
/// tiles or strips: a stopped run throws and leaves nothing behind.
public struct Pipeline: Sendable {
  public let configuration: Configuration

  struct Step: Sendable {
    let name: String
    let run: @Sendable (inout PipelineContext) throws(PipelineError) -> Void
  }

  /// Reading and checking, before any pixel is decoded: bytes, then the headers (dimensions,
  /// pixel count, items, tiles, frames, text chunks), orientation, output size, declared colour.
  static let inspection: [Step] = [
    Step(name: "sniff", run: SniffStep.run),
    Step(name: "header", run: HeaderStep.run),
  ]

  /// The standard path: reserve the decode's memory, decode, and make the output.
  static let standard: [Step] = [
    Step(name: "reserve-memory", run: ReserveMemoryStep.run),
    Step(name: "decode", run: DecodeStep.run),
    Step(name: "flatten-alpha", run: FlattenAlphaStep.run),
    Step(name: "resize", run: ResizeStep.run),
    Step(name: "orient", run: OrientStep.run),
    Step(name: "merge-planes", run: MergePlanesStep.run),
    Step(name: "colour", run: ColourStep.run),
    Step(name: "renditions", run: RenditionStep.run),
    Step(name: "encode", run: EncodeStep.run),
  ]

  /// Run on every output, whichever path made it.
  static let closing: [Step] = [Step(name: "verify", run: VerifyStep.run)]

  /// The step that names the lossless path in the timings.
  static let losslessStepName = "lossless-jpeg"

  /// Every step of the standard path, in order (what a PNG or a resized JPEG goes through).
  static var standardPath: [Step] { inspection + standard + closing }

  /// Which path an input takes once its headers are read.
  enum Route: Equatable {
    /// Rewrite the JPEG with this lossless `tjTransform`; if TurboJPEG refuses after all, the
    /// standard path runs instead.
    case lossless(JPEGCodec.Operation)
    /// Decode, resize, orient, convert, encode.
    case standard
  }

  /// The skip-processing decision, taken in one place from the headers alone: a JPEG that
  /// already fits, is sRGB or untagged, and needs no rotation or one `tjTransform` does
  /// perfectly, is rewritten losslessly (see `LosslessJPEGStep.operation(for:)`).
  static func route(_ c: PipelineContext) -> Route {
    LosslessJPEGStep.operation(for: c).map(Route.lossless) ?? .standard
  }

  /// A pipeline with `configuration`; throws when a setting is out of range.
  public init(configuration: Configuration = Configuration()) throws(ConfigurationError) {
    try configuration.validate()
    self.configuration = configuration
  }

  /// Processes one upload. Same input and configuration → byte-identical output. Stops with
  /// `cancelled` once `cancellation` is raised and with `deadline_exceeded` once
  /// `configuration.deadline` has passed since the call (checked between steps and by
  /// decoders between tiles or strips).
  ///
  /// `profiles`: model profiles whose renditions are made in the same run, from the output's
  /// pixels (see `RenditionStep`); a profile whose size is the output's own gets none.
  public func process(
    _ input: [UInt8], profiles: [ModelProfile] = [], cancellation: PipelineCancellation? = nil
  ) throws(PipelineError) -> ProcessedImage {
    try input.withBytes { input throws(PipelineError) in
      try process(input, profiles: profiles, cancellation: cancellation)
    }
  }

  /// Processes one upload read in place (e.g. a spooled body's file mapping, never copied): the
  /// bytes must stay valid until this returns.
  public func process(
    _ input: UnsafeRawBufferPointer, profiles: [ModelProfile] = [], cancellation: PipelineCancellation? = nil
  ) throws(PipelineError) -> ProcessedImage {
    let clock = ContinuousClock()
    let started = clock.now
    let checkpoint = Checkpoint(cancellation: cancellation, deadline: started + configuration.deadline)
    var context = PipelineContext(input: input, configuration: configuration, checkpoint: checkpoint)
    context.profiles = profiles
    var timings: [StageTiming] = []
    defer { context.reservation?.release() }
    func run(_ steps: [Step]) throws(PipelineError) {
      for step in steps {
        try checkpoint.check()
        let stepStarted = clock.now
        try step.run(&context)
        timings.append(StageTiming(stage: step.name, duration: clock.now - stepStarted))
      }
    }
    try run(Self.inspection)
    if case .lossless(let operation) = Self.route(context) {
      try run([Step(name: Self.losslessStepName) { LosslessJPEGStep.run(&$0, operation: operation) }])
    }
    if context.output == nil {
      try run(Self.standard)
    } else if !profiles.isEmpty {
      try run([Step(name: "renditions", run: RenditionStep.runFromOutput)])
    }
    try run(Self.closing)
    guard let output = context.output, let header = context.header else {
      throw .internal("the pipeline produced no output")
    }
    return ProcessedImage(
      jpeg: output, width: context.outputSize.width, height: context.outputSize.height,
      source: Self.sourceInfo(context, header), losslessTransform: context.losslessTransform,
      renditions: context.renditions, timings: timings)
  }

  /// The renditions of a stored default image (a JPEG this pipeline wrote) for `profiles`,
  /// for a profile asked for after the upload; profiles of the stored image's own size get
  /// none. Under the same deadline, cancellation and memory budget as an upload.
  public func renditions(
    ofStored jpeg: [UInt8], profiles: [ModelProfile], cancellation: PipelineCancellation? = nil
  ) throws(PipelineError) -> [ProfileRendition] {
    let checkpoint = Checkpoint(
      cancellation: cancellation, deadline: ContinuousClock.now + configuration.deadline)
    return try RenditionStep.fromStored(
      jpeg, profiles: profiles, quality: configuration.quality, budget: configuration.memoryBudget,
      checkpoint: checkpoint)
  }

  /// Processes one upload given as `Data`.
  public func process(
    _ input: Data, cancellation: PipelineCancellation? = nil
  ) throws(PipelineError) -> ProcessedImage {
    try process([UInt8](input), cancellation: cancellation)
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
