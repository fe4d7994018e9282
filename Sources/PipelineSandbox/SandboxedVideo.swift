import Crypto
import Glibc
import ImagePipeline
import MovieContainers
import Sandbox
import VideoPipeline

/// A video's stills as the server makes them: the outline read and checked here (Swift only,
/// `MovieAdmission`), the frames decoded in a sandbox child (the `video.stills` job: libavformat,
/// libavcodec, libavfilter and the still pipeline), and every JPEG the child hands back checked
/// here again. There is no path that demuxes or decodes a video outside the sandbox.
public final class SandboxedVideo: Sendable {
  public let pipeline: Pipeline
  public let sandbox: Sandbox
  public let settings: VideoStillsSettings
  private let report: @Sendable (DecodeReport) -> Void

  public init(
    pipeline: Pipeline, sandbox: Sandbox, settings: VideoStillsSettings = VideoStillsSettings(),
    report: @escaping @Sendable (DecodeReport) -> Void = { _ in }
  ) {
    self.pipeline = pipeline
    self.sandbox = sandbox
    self.settings = settings
    self.report = report
  }

  public func stills(
    _ input: UnsafeRawBufferPointer, file: (descriptor: Int32, range: Range<Int>)? = nil,
    cancellation: (any SandboxCancellation)? = nil
  ) throws(VideoError) -> VideoStills {
    try admittedStills(input, file: file, cancellation: cancellation).stills
  }

  /// The stills, with the outline this process read and checked before the child ran (what an
  /// upload's record says about the video).
  public func admittedStills(
    _ input: UnsafeRawBufferPointer, file: (descriptor: Int32, range: Range<Int>)? = nil,
    cancellation: (any SandboxCancellation)? = nil
  ) throws(VideoError) -> (outline: MovieOutline, stills: VideoStills) {
    var decoded: DecodeReport?
    defer { decoded.map(report) }
    let (outline, output) = try run(
      VideoJobs.stills, input, file: file, limits: settings.limits,
      parameters: VideoWire.parameters(pipeline.configuration, settings: settings),
      outputCapacity: SandboxedPipeline.outputCapacity,
      deadline: pipeline.configuration.deadline + SandboxedPipeline.deadlineGrace, cancellation: cancellation,
      decoded: &decoded)
    let stills = try Self.answer(output, input: input, decoded: &decoded, read: VideoWire.read)
    for still in [stills.poster] + stills.frames {
      guard (1...settings.maxEdge).contains(still.width), (1...settings.maxEdge).contains(still.height) else {
        decoded?.outputRejected = true
        throw .pipeline(PipelineError(.internal, "the decoder's still has an impossible size"))
      }
      do { try JPEGOutputVerifier.verify(still.jpeg) } catch {
        decoded?.outputRejected = true
        throw .pipeline(
          PipelineError(.internal, "the decoder's still is not a clean JPEG", detail: "\(error)"))
      }
    }
    return (outline, stills)
  }

  /// The MP4 rendition, made in a sandbox child; checked here again with `MovieOutputCheck`
  /// before it is returned.
  public func rendition(
    _ input: UnsafeRawBufferPointer, file: (descriptor: Int32, range: Range<Int>)? = nil,
    settings: VideoRenditionSettings = VideoRenditionSettings(),
    deadline: Duration = .seconds(600), cancellation: (any SandboxCancellation)? = nil
  ) throws(VideoError) -> [UInt8] {
    var decoded: DecodeReport?
    defer { decoded.map(report) }
    let (_, output) = try run(
      VideoJobs.rendition, input, file: file, limits: settings.limits,
      parameters: VideoWire.parameters(settings),
      outputCapacity: settings.maxOutputBytes + 4096, deadline: deadline, cancellation: cancellation,
      decoded: &decoded)
    let mp4 = try Self.answer(output, input: input, decoded: &decoded, read: VideoWire.readRendition)
    do { try MovieOutputCheck.verify(mp4) } catch {
      decoded?.outputRejected = true
      throw .pipeline(PipelineError(.internal, "the rendition is not clean", detail: "\(error)"))
    }
    return mp4
  }

  /// What the child answered, read with `read`: a refusal it wrote is thrown as it is; an answer
  /// that cannot be read is the input's fault (its hash goes into the report).
  private static func answer<T>(
    _ output: [UInt8], input: UnsafeRawBufferPointer, decoded: inout DecodeReport?,
    read: ([UInt8]) throws -> T
  ) throws(VideoError) -> T {
    do {
      return try read(output)
    } catch let error as VideoError {
      decoded?.refused = true
      throw error
    } catch {
      decoded?.outputRejected = true
      decoded?.inputSHA256 = Hex.encode(SHA256.hash(input))
      throw .undecodable("the sandbox child's answer is unreadable")
    }
  }

  /// Checks `input`'s outline here (no child for a movie the limits refuse), runs `job` on it in
  /// a child and maps what can go wrong there; the outline and the child's output when it
  /// finished. `decoded` becomes what the report says once a child ran. `file`, when given, holds
  /// `input`'s bytes: the child's copy is made from it by the kernel (`Sandbox.run`).
  private func run(
    _ job: SandboxJob, _ input: UnsafeRawBufferPointer, file: (descriptor: Int32, range: Range<Int>)?,
    limits: MovieLimits, parameters: [UInt8],
    outputCapacity: Int, deadline: Duration, cancellation: (any SandboxCancellation)?,
    decoded: inout DecodeReport?
  ) throws(VideoError) -> (MovieOutline, [UInt8]) {
    let outline: MovieOutline
    do {
      outline = try MovieAdmission.admit(input, limits: limits)
    } catch {
      throw .refused(error)
    }
    let run: SandboxRun
    do {
      run = try sandbox.run(
        job: job.name, input: input, inputFile: file, parameters: parameters, outputCapacity: outputCapacity,
        deadline: deadline,
        cancellation: cancellation)
    } catch {
      switch error {
      case .unavailable(let reason):
        throw .pipeline(PipelineError(.sandboxUnavailable, "no decode sandbox is running", detail: reason))
      default:
        throw .pipeline(PipelineError(.internal, "the decode sandbox failed", detail: error.description))
      }
    }
    decoded = DecodeReport(
      job: job.name, outcome: run.outcome, refused: false, outputRejected: false, exit: run.exit,
      inputSHA256: nil)
    if let failure = SandboxedPipeline.failure(of: run) {
      if failure.kind == .corrupt { decoded?.inputSHA256 = Hex.encode(SHA256.hash(input)) }
      throw failure.kind == .corrupt ? .undecodable(failure.reason) : .pipeline(failure)
    }
    return (outline, run.output)
  }
}

/// The video jobs the helper runs.
public enum VideoJobs {
  /// `video.stills`: the input is the movie; the result its stills or why there are none.
  public static let stills = job("video.stills", tooLarge: "the stills are larger than the output file") {
    input, parameters, out throws in
    let (configuration, settings) = try VideoWire.readParameters(parameters)
    // The child's input is its memory file, mapped read-only (SandboxChild).
    let stills = try VideoStillsMaker.make(
      input, pipeline: try Pipeline(configuration: configuration), settings: settings, inputIsMapped: true)
    VideoWire.write(stills, to: &out)
  }

  /// `video.rendition`: the input is the movie; the result its MP4 or why there is none.
  public static let rendition = job("video.rendition", tooLarge: "the rendition is larger than allowed") {
    input, parameters, out throws in
    let settings = try VideoWire.readRenditionParameters(parameters)
    let mp4 = try VideoRenditionMaker.make(input, settings: settings, inputIsMapped: true)
    out.byte(VideoWire.renditionTag)
    out.bytes(mp4)
  }

  /// Opens the video libraries too before the helper gives up opening files.
  @Sendable static func prepare() {
    PipelineJobs.prepare()
    if let failure = VideoStillsMaker.preload() {
      let line = "attachd sandbox helper: \(failure)\n"
      _ = line.withCString { write(2, $0, strlen($0)) }
    }
  }

  /// A job running `body`; a `VideoError` (or unreadable parameters) becomes the result, and a
  /// result too large for the output file the refusal `tooLarge` says.
  private static func job(
    _ name: String, tooLarge: String,
    _ body: @escaping @Sendable (UnsafeRawBufferPointer, [UInt8], inout WireWriter) throws -> Void
  ) -> SandboxJob {
    SandboxJob(
      name: name, prepare: prepare,
      run: { input, parameters, output in
        var out = WireWriter()
        do {
          try body(input, parameters, &out)
        } catch let error as VideoError {
          out = WireWriter()
          VideoWire.write(error, to: &out)
        } catch {
          out = WireWriter()
          VideoWire.write(.undecodable("bad job parameters: \(error)"), to: &out)
        }
        if !output.append(out.buffer) {
          var refusal = WireWriter()
          VideoWire.write(.pipeline(PipelineError(.internal, tooLarge)), to: &refusal)
          output.append(refusal.buffer)
        }
      })
  }
}

/// The video job's parameters (the pipeline's settings and the stills') and result (the stills,
/// or why there are none), read with bounds from an untrusted child.
enum VideoWire {
  static let version: UInt32 = 1

  static func parameters(_ configuration: Pipeline.Configuration, settings: VideoStillsSettings) -> [UInt8] {
    var out = WireWriter()
    out.u32(version)
    out.bytes(PipelineWire.parameters(configuration, profiles: []))
    out.u32(UInt32(settings.minimumFrames))
    out.u32(UInt32(settings.maximumFrames))
    out.u32(UInt32(settings.maxEdge))
    let limits = settings.limits
    for value in [limits.maxBytes, limits.maxFramePixels, limits.maxEdge, limits.maxTracks] {
      out.u64(UInt64(value))
    }
    out.u64(UInt64(limits.maxDuration * 1000))
    out.u64(UInt64(limits.maxFrameRate * 1000))
    return out.buffer
  }

  static func readParameters(_ bytes: [UInt8]) throws -> (Pipeline.Configuration, VideoStillsSettings) {
    var reader = WireReader(bytes)
    guard try reader.u32() == version else {
      throw SandboxError.protocolViolation("video parameters version")
    }
    let (configuration, _) = try PipelineWire.readParameters(try reader.bytes())
    var settings = VideoStillsSettings()
    settings.minimumFrames = Int(min(try reader.u32(), 64))
    settings.maximumFrames = Int(min(try reader.u32(), 64))
    settings.maxEdge = Int(min(try reader.u32(), 16384))
    settings.limits.maxBytes = Int(clamping: try reader.u64())
    settings.limits.maxFramePixels = Int(clamping: try reader.u64())
    settings.limits.maxEdge = Int(clamping: try reader.u64())
    settings.limits.maxTracks = Int(clamping: try reader.u64())
    settings.limits.maxDuration = Double(try reader.u64()) / 1000
    settings.limits.maxFrameRate = Double(try reader.u64()) / 1000
    return (configuration, settings)
  }

  private static let stillsTag: UInt8 = 1
  private static let undecodableTag: UInt8 = 2
  private static let pipelineTag: UInt8 = 3
  static let renditionTag: UInt8 = 4

  static func parameters(_ settings: VideoRenditionSettings) -> [UInt8] {
    var out = WireWriter()
    out.u32(version)
    for value in [settings.maxEdge, settings.maxFrameRate, settings.crf, settings.maxOutputBytes] {
      out.u64(UInt64(value))
    }
    out.string(settings.preset)
    return out.buffer
  }

  static func readRenditionParameters(_ bytes: [UInt8]) throws -> VideoRenditionSettings {
    var reader = WireReader(bytes)
    guard try reader.u32() == version else {
      throw SandboxError.protocolViolation("video parameters version")
    }
    var settings = VideoRenditionSettings()
    settings.maxEdge = Int(min(try reader.u64(), 8192))
    settings.maxFrameRate = Int(min(try reader.u64(), 240))
    settings.crf = Int(min(try reader.u64(), 51))
    settings.maxOutputBytes = Int(min(try reader.u64(), 1 << 32))
    let preset = try reader.string()
    // x264's presets only: the name goes to av_opt_set.
    let presets = [
      "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow",
    ]
    guard presets.contains(preset) else { throw SandboxError.protocolViolation("unknown preset") }
    settings.preset = preset
    return settings
  }

  /// The MP4, or the child's `VideoError` (thrown).
  static func readRendition(_ bytes: [UInt8]) throws -> [UInt8] {
    var reader = WireReader(bytes)
    let tag = try reader.byte()
    if tag == renditionTag { return try reader.bytes() }
    // An error: read as the stills' errors are.
    _ = try read(bytes)
    throw SandboxError.protocolViolation("a rendition answered with stills")
  }

  static func write(_ stills: VideoStills, to out: inout WireWriter) {
    out.byte(stillsTag)
    out.byte(stills.toneMapped ? 1 : 0)
    out.u32(UInt32(stills.frames.count + 1))
    for still in [stills.poster] + stills.frames {
      out.u64(UInt64(max(0, still.time) * 1_000_000))
      out.u32(UInt32(still.width))
      out.u32(UInt32(still.height))
      out.bytes(still.jpeg)
    }
  }

  static func write(_ error: VideoError, to out: inout WireWriter) {
    switch error {
    case .pipeline(let error):
      out.byte(pipelineTag)
      out.string(error.kind.rawValue)
      out.string(error.reason)
    case .undecodable(let reason):
      out.byte(undecodableTag)
      out.string(reason)
    case .refused(let refusal):
      // The server checked the header before; a child that refuses anyway says why in words.
      out.byte(undecodableTag)
      out.string("refused: \(refusal.code)")
    }
  }

  /// The stills, or the child's `VideoError` (thrown); anything else is a protocol violation.
  static func read(_ bytes: [UInt8]) throws -> VideoStills {
    var reader = WireReader(bytes)
    switch try reader.byte() {
    case stillsTag:
      let toneMapped = try reader.byte() != 0
      var stills: [VideoStill] = []
      for _ in 0..<min(try reader.u32(), 65) {
        let time = Double(try reader.u64()) / 1_000_000
        let width = Int(try reader.u32())
        let height = Int(try reader.u32())
        stills.append(VideoStill(time: time, jpeg: try reader.bytes(), width: width, height: height))
      }
      guard let poster = stills.first, stills.count >= 2 else {
        throw SandboxError.protocolViolation("no stills")
      }
      return VideoStills(poster: poster, frames: Array(stills.dropFirst()), toneMapped: toneMapped)
    case undecodableTag:
      throw VideoError.undecodable(try reader.string())
    case pipelineTag:
      guard let kind = PipelineError.Kind(rawValue: try reader.string()) else {
        throw SandboxError.protocolViolation("unknown pipeline error")
      }
      throw VideoError.pipeline(PipelineError(kind, try reader.string()))
    default:
      throw SandboxError.protocolViolation("unknown video result")
    }
  }
}
