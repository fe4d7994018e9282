import ImageCodecs

/// A still made from one decoded video frame.
public struct FrameStill: Sendable {
  /// The clean JPEG (verified like every output).
  public var jpeg: [UInt8]
  /// Its upright size.
  public var width: Int
  public var height: Int
}

extension Pipeline {
  /// The steps a decoded video frame goes through: the standard path after `decode`, so a
  /// video's stills are upright, sRGB and fitted exactly as a photo's are.
  static let frame: [Step] = [
    Step(name: "resize", run: ResizeStep.run),
    Step(name: "orient", run: OrientStep.run),
    Step(name: "merge-planes", run: MergePlanesStep.run),
    Step(name: "colour", run: ColourStep.run),
    Step(name: "encode", run: EncodeStep.run),
  ]

  /// Makes a still of a decoded frame: `planes` in stored orientation (8-bit Y′CbCr that say
  /// their matrix, range and siting), turned by the EXIF orientation `orientation` (1…8, the
  /// track's display matrix), fitted into `maxEdge` (the configuration's when nil), never
  /// upscaled. The samples are taken as BT.709 video (sRGB primaries): HDR frames are
  /// tone-mapped to that before they get here.
  public func still(
    fromFrame planes: YCbCrPlanes, orientation: Int, maxEdge: Int? = nil,
    cancellation: PipelineCancellation? = nil
  ) throws(PipelineError) -> FrameStill {
    let checkpoint = Checkpoint(
      cancellation: cancellation, deadline: ContinuousClock.now + configuration.deadline)
    var context = PipelineContext(
      input: UnsafeRawBufferPointer(start: nil, count: 0), configuration: configuration,
      checkpoint: checkpoint)
    let apply = Orientation(exifValue: orientation)
    context.orientation = OrientationDecision(
      apply: apply, reported: apply, source: .none, ignoreHEIFTransformations: false)
    context.displaySize = apply.displaySize(width: planes.width, height: planes.height)
    context.outputSize = Resampler.fitted(
      width: context.displaySize.width, height: context.displaySize.height,
      maxEdge: maxEdge ?? configuration.maxEdge)
    context.planes = planes
    for step in Self.frame + Self.closing {
      try checkpoint.check()
      try step.run(&context)
    }
    guard let output = context.output else { throw .internal("the frame produced no output") }
    return FrameStill(jpeg: output, width: context.outputSize.width, height: context.outputSize.height)
  }
}
