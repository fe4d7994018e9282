import Foundation
import ImagePipeline
import PipelineSandbox
import Sandbox
import VideoPipeline

/// `attachd stills IN DIR [--max-edge N] [--frames MIN-MAX] [--no-sandbox]`: a video's poster and
/// evenly spaced frames, decoded in the same sandbox as `serve`'s, written as `poster.jpg` and
/// `frame-01.jpg` … into DIR (made if missing), each atomically; standard output gets one JSON
/// object with each still's time and size. On refusal: no file, one line on stderr,
/// `attachd: <code>: <reason>`, and the same exit statuses as `process`.
public enum StillsCLI {
  static let usage = "usage: attachd stills IN DIR [--max-edge N] [--frames MIN-MAX] [--no-sandbox]"

  public static func run(
    _ arguments: [String], stderr: (String) -> Void = CLIOutput.standardError,
    stdout: (String) -> Void = CLIOutput.standardOutput
  ) -> Int32 {
    guard
      let parsed = VideoArguments.parse(
        arguments, usage: usage, maxEdges: 16...8192, takesFrames: true, stderr: stderr)
    else { return ProcessCLI.exitUsage }
    var settings = VideoStillsSettings()
    if let edge = parsed.maxEdge { settings.maxEdge = edge }
    if let frames = parsed.frames { (settings.minimumFrames, settings.maximumFrames) = frames }
    let (positional, sandboxed) = (parsed.positional, parsed.sandboxed)
    let (input, directory) = (positional[0], positional[1])
    guard let data = InputFile(path: input) else {
      stderr("attachd: no_input: cannot read \(input)")
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
      Result { () throws(VideoError) -> VideoStills in
        guard sandboxed else {
          return try VideoStillsMaker.make(bytes, pipeline: pipeline, settings: settings, inputIsMapped: true)
        }
        sandbox = Sandbox(configuration: SandboxConfiguration())
        return try SandboxedVideo(pipeline: pipeline, sandbox: sandbox!, settings: settings).stills(
          bytes, file: data.file)
      }
    }
    let stills: VideoStills
    switch made {
    case .success(let value): stills = value
    case .failure(let error):
      stderr("attachd: \(error.code): \(reason(error))")
      return exitCode(for: error)
    }
    do {
      try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
      try AtomicFile.write(stills.poster.jpeg, to: directory + "/poster.jpg")
      for (index, frame) in stills.frames.enumerated() {
        try AtomicFile.write(frame.jpeg, to: directory + "/frame-\(index < 9 ? "0" : "")\(index + 1).jpg")
      }
    } catch {
      stderr("attachd: cant_create: cannot write into \(directory): \(error)")
      return ProcessCLI.exitCantCreate
    }
    func describe(_ still: VideoStill) -> String {
      "{\"time\":\(still.time),\"width\":\(still.width),\"height\":\(still.height),\"bytes\":\(still.jpeg.count)}"
    }
    stdout(
      "{\"poster\":\(describe(stills.poster)),\"frames\":[\(stills.frames.map(describe).joined(separator: ","))],"
        + "\"tone_mapped\":\(stills.toneMapped)}\n")
    return 0
  }

  static func reason(_ error: VideoError) -> String {
    switch error {
    case .refused(let refusal): refusal.reason
    case .undecodable(let reason): reason
    case .pipeline(let error): error.reason
    }
  }

  static func exitCode(for error: VideoError) -> Int32 {
    switch error {
    case .refused, .undecodable: ProcessCLI.exitBadInput
    case .pipeline(let error): ProcessCLI.exitCode(for: error)
    }
  }
}
