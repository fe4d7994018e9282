import ImagePipeline
import Sandbox

/// Where an image's pixels are processed: in the decode sandbox (`SandboxedPipeline`, what the
/// server always uses), or in this process (`InProcessPipeline`: `attachd process --no-sandbox`
/// for debugging, and the benchmarks' unsandboxed side).
public protocol ImageProcessing: Sendable {
  /// The pipeline's settings (and its memory budget).
  var pipeline: Pipeline { get }
  /// `Pipeline.process`.
  func process(
    _ input: UnsafeRawBufferPointer, profiles: [ModelProfile], cancellation: (any SandboxCancellation)?
  ) throws(PipelineError) -> ProcessedImage
  /// `Pipeline.renditions(ofStored:)`.
  func renditions(
    ofStored jpeg: [UInt8], profiles: [ModelProfile], cancellation: (any SandboxCancellation)?
  ) throws(PipelineError) -> [ProfileRendition]
}

extension SandboxedPipeline: ImageProcessing {}

/// The pipeline in this process, with no isolation: never what `serve` runs.
public struct InProcessPipeline: ImageProcessing {
  public let pipeline: Pipeline

  public init(pipeline: Pipeline) { self.pipeline = pipeline }

  public func process(
    _ input: UnsafeRawBufferPointer, profiles: [ModelProfile], cancellation: (any SandboxCancellation)?
  ) throws(PipelineError) -> ProcessedImage {
    try pipeline.process(input, profiles: profiles, cancellation: Self.bridge(cancellation))
  }

  public func renditions(
    ofStored jpeg: [UInt8], profiles: [ModelProfile], cancellation: (any SandboxCancellation)?
  ) throws(PipelineError) -> [ProfileRendition] {
    try pipeline.renditions(ofStored: jpeg, profiles: profiles, cancellation: Self.bridge(cancellation))
  }

  private static func bridge(_ cancellation: (any SandboxCancellation)?) -> PipelineCancellation? {
    guard let cancellation else { return nil }
    let bridged = PipelineCancellation()
    cancellation.onCancel { bridged.cancel() }
    return bridged
  }
}
