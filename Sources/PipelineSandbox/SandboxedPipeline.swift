import Crypto
import ImagePipeline
import Sandbox

/// What the server learns of one sandboxed decode, for its metrics and its security log.
public struct DecodeReport: Sendable {
  /// The job (`pipeline.process`, `pipeline.renditions`).
  public var job: String
  /// How its child ended.
  public var outcome: SandboxOutcome
  /// Whether a child that finished reported a refusal of the input (the pipeline's own error).
  public var refused: Bool
  /// Whether the server refused a finished child's output (not a clean JPEG): a child that
  /// was made to lie, treated as a violation.
  public var outputRejected: Bool
  /// What the helper saw of the child.
  public var exit: SandboxExit
  /// SHA-256 of the input, for a child that crashed or broke its filter (never its bytes).
  public var inputSHA256: String?
}

/// The pipeline as the server runs it: Swift-only checks here (sniff, headers, limits, the
/// memory budget), every pixel in the sandbox (one child per image), and every JPEG a child
/// hands back checked here again with our own marker reader before anything stores it.
///
/// A child's fate becomes the pipeline's error: a crash or a filter violation `corrupt` (the
/// input broke or attacked its decoder), its memory limit `decoder_memory_limit`, its CPU limit
/// or deadline `deadline_exceeded`, its client gone `cancelled`, no helper `sandbox_unavailable`.
/// There is no path that decodes outside the sandbox.
public final class SandboxedPipeline: Sendable {
  /// The settings, and the Swift-only admission (`Pipeline.admit`).
  public let pipeline: Pipeline
  public let sandbox: Sandbox
  private let report: @Sendable (DecodeReport) -> Void

  /// Bytes a child may write: the output JPEG and its renditions (pages are only used where
  /// written).
  static let outputCapacity = 256 << 20
  /// How much longer than the pipeline's own deadline the server waits before killing a child
  /// (the child stops itself at its deadline; this catches one stuck inside a library).
  static let deadlineGrace: Duration = .seconds(2)

  public init(
    pipeline: Pipeline, sandbox: Sandbox, report: @escaping @Sendable (DecodeReport) -> Void = { _ in }
  ) {
    self.pipeline = pipeline
    self.sandbox = sandbox
    self.report = report
  }

  /// `Pipeline.process`, sandboxed.
  public func process(
    _ input: UnsafeRawBufferPointer, profiles: [ModelProfile] = [],
    cancellation: (any SandboxCancellation)? = nil
  ) throws(PipelineError) -> ProcessedImage {
    let admission = try pipeline.admit(input)
    let reservation = try pipeline.configuration.memoryBudget.reserve(admission.estimatedBytes)
    defer { reservation.release() }
    let result = try run(
      PipelineJobs.process.name, input: input, profiles: profiles, cancellation: cancellation)
    guard case .processed(let image) = result else {
      throw PipelineError(.internal, "the decoder answered another job")
    }
    try check([image.jpeg] + image.renditions.map(\.jpeg), sizes: [(image.width, image.height)])
    return image
  }

  /// `Pipeline.renditions(ofStored:)`, sandboxed (the stored JPEG is ours, but decoding is done
  /// in the sandbox all the same: no decoder runs in the server).
  public func renditions(
    ofStored jpeg: [UInt8], profiles: [ModelProfile], cancellation: (any SandboxCancellation)? = nil
  ) throws(PipelineError) -> [ProfileRendition] {
    let result: PipelineWire.Result
    do {
      result = try jpeg.withUnsafeBytes { bytes in
        try run(PipelineJobs.renditions.name, input: bytes, profiles: profiles, cancellation: cancellation)
      }
    } catch let error as PipelineError {
      throw error
    } catch {
      throw PipelineError(.internal, "the decode sandbox failed", detail: "\(error)")
    }
    guard case .renditions(let renditions) = result else {
      throw PipelineError(.internal, "the decoder answered another job")
    }
    try check(renditions.map(\.jpeg), sizes: renditions.map { ($0.width, $0.height) })
    return renditions
  }

  private func run(
    _ job: String, input: UnsafeRawBufferPointer, profiles: [ModelProfile],
    cancellation: (any SandboxCancellation)?
  ) throws(PipelineError) -> PipelineWire.Result {
    let run: SandboxRun
    do {
      run = try sandbox.run(
        job: job, input: input,
        parameters: PipelineWire.parameters(pipeline.configuration, profiles: profiles),
        outputCapacity: Self.outputCapacity, deadline: pipeline.configuration.deadline + Self.deadlineGrace,
        cancellation: cancellation)
    } catch {
      switch error {
      case .unavailable(let reason):
        throw PipelineError(.sandboxUnavailable, "no decode sandbox is running", detail: reason)
      default: throw PipelineError(.internal, "the decode sandbox failed", detail: error.description)
      }
    }
    var decoded = DecodeReport(
      job: job, outcome: run.outcome, refused: false, outputRejected: false, exit: run.exit, inputSHA256: nil)
    switch run.outcome {
    case .crashed, .violation: decoded.inputSHA256 = Hex.encode(SHA256.hash(input))
    default: break
    }
    do {
      let result = try Self.result(of: run)
      report(decoded)
      return result
    } catch let error as PipelineError {
      decoded.refused = run.outcome == .finished
      report(decoded)
      throw error
    } catch {
      // A finished child whose result does not parse lied or broke: treated as a violation.
      decoded.outputRejected = true
      decoded.inputSHA256 = Hex.encode(SHA256.hash(input))
      report(decoded)
      throw PipelineError(.corrupt, "the decoder's answer is unreadable", detail: "\(error)")
    }
  }

  /// The child's result, or the pipeline error its end means.
  static func result(of run: SandboxRun) throws -> PipelineWire.Result {
    if let failure = failure(of: run) { throw failure }
    return try PipelineWire.read(run.output)
  }

  /// The pipeline error a child's end means; nil for a child that finished (its output says).
  static func failure(of run: SandboxRun) -> PipelineError? {
    switch run.outcome {
    case .finished: return nil
    case .crashed(let signal):
      return PipelineError(.corrupt, "the image crashed its decoder", detail: signal.map { "signal \($0)" })
    case .violation:
      return PipelineError(
        .corrupt, "the image made its decoder break its sandbox's rules", detail: "seccomp")
    case .memoryLimit:
      return PipelineError(.decoderMemoryLimit, "decoding the image needs more memory than one image may use")
    case .cpuLimit:
      return PipelineError(.deadlineExceeded, "decoding the image used up its CPU time")
    case .stopped:
      return run.deadlineExceeded
        ? PipelineError(.deadlineExceeded, "processing the image took longer than the pipeline deadline")
        : PipelineError(.cancelled, "processing was cancelled by its caller")
    case .killed:
      return PipelineError(.sandboxUnavailable, "the decoder was killed", detail: "SIGKILL from outside")
    }
  }

  /// Every JPEG a child returned must be clean (our own marker reader) and within `maxEdge`.
  private func check(_ jpegs: [[UInt8]], sizes: [(Int, Int)]) throws(PipelineError) {
    let maxEdge = pipeline.configuration.maxEdge
    for (width, height) in sizes where !(1...maxEdge).contains(width) || !(1...maxEdge).contains(height) {
      throw PipelineError(
        .internal, "the decoder's output has an impossible size", detail: "\(width)×\(height)")
    }
    for jpeg in jpegs {
      do { try JPEGOutputVerifier.verify(jpeg) } catch {
        throw PipelineError(.internal, "the decoder's output is not a clean JPEG", detail: "\(error)")
      }
    }
  }
}
