import Foundation
import ImagePipeline
import PipelineSandbox
import Sandbox

/// `attachd process IN OUT [--max-edge N] [--quality Q] [--deadline SECONDS] [--no-sandbox]`: the
/// pipeline on one file, decoded in the same sandbox as `serve`'s (`--no-sandbox`, for debugging
/// the CLI only, decodes in this process).
///
/// Exit 0 with the JPEG written atomically (temporary file in the same directory, fsync,
/// rename), or exit ≠ 0 with no output file and one line on stderr: `attachd: <code>: <reason>`.
public enum ProcessCLI {
  /// sysexits.h codes: usage, bad input data, missing input, internal error, can't create, retry.
  public static let exitUsage: Int32 = 64
  public static let exitBadInput: Int32 = 65
  public static let exitNoInput: Int32 = 66
  public static let exitInternal: Int32 = 70
  public static let exitCantCreate: Int32 = 73
  public static let exitTryAgain: Int32 = 75

  static let usage =
    "usage: attachd process IN OUT [--max-edge N] [--quality Q] [--deadline SECONDS] [--no-sandbox]"

  /// Runs the command; `arguments` are those after `process` (a leading `process` is tolerated).
  public static func run(_ arguments: [String], stderr: (String) -> Void = CLIOutput.standardError) -> Int32 {
    var args = arguments
    if args.first == "process" { args.removeFirst() }
    var configuration = Pipeline.Configuration()
    var positional: [String] = []
    var sandboxed = true
    var i = 0
    while i < args.count {
      let arg = args[i]
      if arg == "--no-sandbox" {
        sandboxed = false
        i += 1
      } else if arg == "--max-edge" || arg == "--quality" {
        guard i + 1 < args.count, let value = Int(args[i + 1]) else {
          stderr("attachd: usage: \(arg) needs a number\n\(usage)")
          return exitUsage
        }
        if arg == "--max-edge" { configuration.maxEdge = value } else { configuration.quality = value }
        i += 2
      } else if arg == "--deadline" {
        guard i + 1 < args.count, let seconds = Double(args[i + 1]), seconds > 0, seconds.isFinite else {
          stderr("attachd: usage: --deadline needs a positive number of seconds\n\(usage)")
          return exitUsage
        }
        configuration.deadline = .nanoseconds(Int64((min(seconds, 1e9) * 1e9).rounded()))
        i += 2
      } else if arg.hasPrefix("--") {
        stderr("attachd: usage: unknown option \(arg)\n\(usage)")
        return exitUsage
      } else {
        positional.append(arg)
        i += 1
      }
    }
    guard positional.count == 2 else {
      stderr("attachd: usage: \(usage)")
      return exitUsage
    }
    let pipeline: Pipeline
    do { pipeline = try Pipeline(configuration: configuration) } catch {
      stderr("attachd: usage: \(error.message)")
      return exitUsage
    }
    let (input, output) = (positional[0], positional[1])
    guard let data = FileManager.default.contents(atPath: input) else {
      stderr("attachd: no_input: cannot read \(input)")
      return exitNoInput
    }
    let imaging: any ImageProcessing
    var sandbox: Sandbox?
    if sandboxed {
      sandbox = Sandbox(configuration: SandboxConfiguration())
      imaging = SandboxedPipeline(pipeline: pipeline, sandbox: sandbox!)
    } else {
      imaging = InProcessPipeline(pipeline: pipeline)
    }
    defer { sandbox?.stop() }
    // Read in place: the file's bytes are not copied again into an array.
    let processed = data.withUnsafeBytes { bytes in
      Result { () throws(PipelineError) in try imaging.process(bytes, profiles: [], cancellation: nil) }
    }
    let result: ProcessedImage
    switch processed {
    case .success(let image): result = image
    case .failure(let error):
      stderr("attachd: \(error.code): \(error.reason)")
      return exitCode(for: error)
    }
    do { try AtomicFile.write(result.jpeg, to: output) } catch {
      stderr("attachd: cant_create: cannot write \(output): \(error)")
      return exitCantCreate
    }
    return 0
  }

  /// Input problems are 65; a full memory budget or a passed deadline is temporary (75);
  /// anything else internal (70).
  public static func exitCode(for error: PipelineError) -> Int32 {
    switch error.kind {
    case .internal: exitInternal
    case .memoryBudget, .deadlineExceeded, .cancelled, .sandboxUnavailable: exitTryAgain
    case .empty, .unsupportedFormat, .unsupportedJPEGPrecision, .animatedUnsupported, .tooLargeBytes,
      .pixelLimit, .dimensionLimit, .tooManyItems, .metadataTooLarge, .corrupt, .truncated,
      .decoderMemoryLimit:
      exitBadInput
    }
  }
}

/// Where the CLI writes its diagnostics.
public enum CLIOutput {
  /// Writes one line to standard error.
  public static func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
  }

  /// Writes text to standard output.
  public static func standardOutput(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
  }
}
