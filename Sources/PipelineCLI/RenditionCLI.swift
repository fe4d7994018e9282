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
    guard
      let parsed = VideoArguments.parse(
        arguments, usage: usage, maxEdges: 16...4096, takesFrames: false, stderr: stderr)
    else { return ProcessCLI.exitUsage }
    var settings = VideoRenditionSettings()
    if let edge = parsed.maxEdge { settings.maxEdge = edge }
    let (positional, sandboxed) = (parsed.positional, parsed.sandboxed)
    guard let data = InputFile(path: positional[0]) else {
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
        guard sandboxed else {
          return try VideoRenditionMaker.make(bytes, settings: settings, inputIsMapped: true)
        }
        sandbox = Sandbox(configuration: SandboxConfiguration())
        return try SandboxedVideo(pipeline: pipeline, sandbox: sandbox!).rendition(
          bytes, file: data.file, settings: settings)
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
