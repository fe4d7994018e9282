import Foundation
import ImagePipeline
import PipelineSandbox
import Sandbox
import VideoPipeline

/// `attachd rendition IN OUT.mp4 [--max-edge N] [--no-sandbox]`: a video's MP4 rendition (H.264
/// High, AAC-LC, upright, no metadata: docs/video.md), made in the same sandbox as `serve`'s and
/// written atomically; standard output gets its size. On refusal: no file, one line on stderr,
/// `attachd: <code>: <reason>`, and the statuses of `stills`.
public enum RenditionCLI {
  static let usage = "usage: attachd rendition IN OUT.mp4 [--max-edge N] [--no-sandbox]"

  public static func run(
    _ arguments: [String], stderr: (String) -> Void = CLIOutput.standardError,
    stdout: (String) -> Void = CLIOutput.standardOutput
  ) -> Int32 {
    var settings = VideoRenditionSettings()
    var positional: [String] = []
    var sandboxed = true
    var i = 0
    while i < arguments.count {
      switch arguments[i] {
      case "--no-sandbox":
        sandboxed = false
        i += 1
      case "--max-edge":
        guard i + 1 < arguments.count, let value = Int(arguments[i + 1]), (16...4096).contains(value) else {
          stderr("attachd: usage: --max-edge needs a number from 16 to 4096\n\(usage)")
          return ProcessCLI.exitUsage
        }
        settings.maxEdge = value
        i += 2
      case let arg where arg.hasPrefix("--"):
        stderr("attachd: usage: unknown option \(arg)\n\(usage)")
        return ProcessCLI.exitUsage
      case let arg:
        positional.append(arg)
        i += 1
      }
    }
    guard positional.count == 2 else {
      stderr("attachd: usage: \(usage)")
      return ProcessCLI.exitUsage
    }
    guard let data = FileManager.default.contents(atPath: positional[0]) else {
      stderr("attachd: no_input: cannot read \(positional[0])")
      return ProcessCLI.exitNoInput
    }
    let pipeline: Pipeline
    do { pipeline = try Pipeline() } catch {
      stderr("attachd: internal_error: \(error.message)")
      return ProcessCLI.exitInternal
    }
    var sandbox: Sandbox?
    defer { sandbox?.stop() }
    let made = data.withUnsafeBytes { bytes in
      Result { () throws(VideoError) -> [UInt8] in
        guard sandboxed else { return try VideoRenditionMaker.make(bytes, settings: settings) }
        sandbox = Sandbox(configuration: SandboxConfiguration())
        return try SandboxedVideo(pipeline: pipeline, sandbox: sandbox!).rendition(bytes, settings: settings)
      }
    }
    switch made {
    case .success(let mp4):
      do { try AtomicFile.write(mp4, to: positional[1]) } catch {
        stderr("attachd: cant_create: cannot write \(positional[1]): \(error)")
        return ProcessCLI.exitCantCreate
      }
      stdout("{\"bytes\":\(mp4.count)}\n")
      return 0
    case .failure(let error):
      stderr("attachd: \(error.code): \(StillsCLI.reason(error))")
      return StillsCLI.exitCode(for: error)
    }
  }
}
