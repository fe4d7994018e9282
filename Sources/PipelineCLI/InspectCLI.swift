import Foundation
import ImagePipeline

/// `attachd inspect IN`: what the pipeline would decide about a file, as JSON, without decoding.
public enum InspectCLI {
  /// Runs the command; `arguments` are those after `inspect` (a leading `inspect` is tolerated).
  public static func run(
    _ arguments: [String], stdout: (String) -> Void = CLIOutput.standardOutput,
    stderr: (String) -> Void = CLIOutput.standardError
  ) -> Int32 {
    var args = arguments
    if args.first == "inspect" && args.count > 1 { args.removeFirst() }
    guard args.count == 1, !args[0].hasPrefix("--") else {
      stderr("attachd: usage: attachd inspect IN")
      return ProcessCLI.exitUsage
    }
    guard let data = FileManager.default.contents(atPath: args[0]) else {
      stderr("attachd: no_input: cannot read \(args[0])")
      return ProcessCLI.exitNoInput
    }
    let pipeline: Pipeline
    do { pipeline = try Pipeline() } catch {
      stderr("attachd: internal_error: \(error.message)")
      return ProcessCLI.exitInternal
    }
    do {
      let report = InspectionReport(try pipeline.inspect([UInt8](data)))
      stdout(report.json + "\n")
      return 0
    } catch {
      stderr("attachd: \(error.code): \(error.reason)")
      return ProcessCLI.exitCode(for: error)
    }
  }
}
