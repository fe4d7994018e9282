import Glibc
import ImageCodecs
import ImagePipeline
import Sandbox

/// The pipeline's jobs, run by the helper in a locked-down child: the whole pixel path of an
/// upload (decode, orientation, colour — ICC profiles are attacker data —, resampling, encode),
/// and renditions of a stored image for a profile asked for later.
public enum PipelineJobs {
  /// `process`: the input is the upload; the result a `ProcessedImage` or the refusal.
  public static let process = job("pipeline.process") {
    pipeline, input, profiles, out throws(PipelineError) in
    PipelineWire.write(try pipeline.process(input, profiles: profiles), to: &out)
  }

  /// `renditions`: the input is a stored default JPEG; the result its renditions.
  public static let renditions = job("pipeline.renditions") {
    pipeline, input, profiles, out throws(PipelineError) in
    PipelineWire.write(try pipeline.renditions(ofStored: Array(input), profiles: profiles), to: &out)
  }

  /// A job running `body` with the pipeline its parameters describe; the pipeline's refusal (or
  /// unreadable parameters) becomes the result.
  private static func job(
    _ name: String,
    _ body:
      @escaping @Sendable (Pipeline, UnsafeRawBufferPointer, [ModelProfile], inout WireWriter)
      throws(PipelineError) -> Void
  ) -> SandboxJob {
    SandboxJob(
      name: name, prepare: prepare,
      run: { input, parameters, output in
        var out = WireWriter()
        do {
          let (configuration, profiles) = try PipelineWire.readParameters(parameters)
          try body(try Pipeline(configuration: configuration), input, profiles, &out)
        } catch let error as PipelineError {
          out = WireWriter()
          PipelineWire.write(error, to: &out)
        } catch {
          out = WireWriter()
          PipelineWire.write(PipelineError(.internal, "bad job parameters", detail: "\(error)"), to: &out)
        }
        finish(out, into: &output)
      })
  }

  /// Every job the helper of `attachd` runs: the pipeline's and the probes.
  public static let all: [SandboxJob] =
    [process, renditions, VideoJobs.stills, VideoJobs.rendition] + SandboxProbes.all

  /// Opens the delay-loaded codec libraries before the helper gives up opening files.
  @Sendable public static func prepare() {
    for failure in CodecLibraries.preload() {
      let line = "attachd sandbox helper: \(failure)\n"
      _ = line.withCString { write(2, $0, strlen($0)) }
    }
  }

  /// Writes the result, or, when it does not fit the output, the refusal that says so.
  private static func finish(_ out: WireWriter, into output: inout SandboxOutput) {
    guard !output.append(out.buffer) else { return }
    var refusal = WireWriter()
    PipelineWire.write(
      PipelineError(.internal, "the output is larger than the sandbox's output file"), to: &refusal)
    output.append(refusal.buffer)
  }
}
