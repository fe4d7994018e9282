import ImagePipeline
import Sandbox

/// What travels between the server and a pipeline job: the job's parameters (the pipeline's
/// settings and the profiles asked for) and its result (the processed image, or the pipeline's
/// refusal). The result comes from an untrusted child: every field is read with bounds, and the
/// server checks the JPEGs themselves again.
enum PipelineWire {
  static let version: UInt32 = 1

  /// The settings a child's pipeline is built with, and the profiles of this job.
  static func parameters(_ configuration: Pipeline.Configuration, profiles: [ModelProfile]) -> [UInt8] {
    var out = WireWriter()
    out.u32(version)
    out.u32(UInt32(configuration.maxEdge))
    out.u32(UInt32(configuration.quality))
    let limits = configuration.limits
    for value in [
      limits.maxInputBytes, limits.maxDimension, limits.maxPixels, limits.maxHEIFItems, limits.maxHEIFTiles,
      limits.maxPNGTextBytes,
    ] {
      out.u64(UInt64(value))
    }
    out.u32(UInt32(configuration.heifThreads))
    out.u32(UInt32(configuration.hevcThreads))
    out.byte(configuration.losslessJPEG ? 1 : 0)
    let (seconds, attoseconds) = configuration.deadline.components
    out.u64(UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000))
    out.u32(UInt32(profiles.count))
    for profile in profiles { out.string(profile.rawValue) }
    return out.buffer
  }

  /// The configuration and profiles of `bytes` (in the child: a memory budget of its own, as
  /// large as its address space allows; the server reserved the estimate already).
  static func readParameters(_ bytes: [UInt8]) throws -> (Pipeline.Configuration, [ModelProfile]) {
    var reader = WireReader(bytes)
    guard try reader.u32() == version else {
      throw SandboxError.protocolViolation("pipeline parameters version")
    }
    var configuration = Pipeline.Configuration()
    configuration.maxEdge = Int(try reader.u32())
    configuration.quality = Int(try reader.u32())
    configuration.limits.maxInputBytes = Int(try reader.u64())
    configuration.limits.maxDimension = Int(try reader.u64())
    configuration.limits.maxPixels = Int(try reader.u64())
    configuration.limits.maxHEIFItems = Int(try reader.u64())
    configuration.limits.maxHEIFTiles = Int(try reader.u64())
    configuration.limits.maxPNGTextBytes = Int(try reader.u64())
    configuration.heifThreads = Int(try reader.u32())
    configuration.hevcThreads = Int(try reader.u32())
    configuration.losslessJPEG = try reader.byte() != 0
    configuration.deadline = .nanoseconds(Int64(clamping: try reader.u64()))
    configuration.memoryBudget = MemoryBudget(capacity: Int.max / 2)
    var profiles: [ModelProfile] = []
    for _ in 0..<min(try reader.u32(), 64) {
      guard let profile = ModelProfile(rawValue: try reader.string()) else {
        throw SandboxError.protocolViolation("unknown profile")
      }
      profiles.append(profile)
    }
    return (configuration, profiles)
  }

  // MARK: Results

  private static let processedTag: UInt8 = 1
  private static let renditionsTag: UInt8 = 2
  private static let refusedTag: UInt8 = 3

  static func write(_ image: ProcessedImage, to out: inout WireWriter) {
    out.byte(processedTag)
    out.bytes(image.jpeg)
    out.u32(UInt32(image.width))
    out.u32(UInt32(image.height))
    let source = image.source
    out.string(source.format)
    for value in [
      source.width, source.height, source.displayWidth, source.displayHeight, source.bytes,
      source.orientation,
    ] {
      out.u64(UInt64(value))
    }
    out.string(source.orientationSource.rawValue)
    out.byte(source.colourProfile == nil ? 0 : 1)
    out.string(source.colourProfile ?? "")
    writeStrings(source.metadataFound, to: &out)
    writeStrings(source.metadataStripped, to: &out)
    out.byte(image.losslessTransform ? 1 : 0)
    writeRenditions(image.renditions, to: &out)
    out.u32(UInt32(image.timings.count))
    for timing in image.timings {
      out.string(timing.stage)
      let (seconds, attoseconds) = timing.duration.components
      out.u64(UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds / 1_000_000_000)))
    }
  }

  static func write(_ renditions: [ProfileRendition], to out: inout WireWriter) {
    out.byte(renditionsTag)
    writeRenditions(renditions, to: &out)
  }

  static func write(_ error: PipelineError, to out: inout WireWriter) {
    out.byte(refusedTag)
    out.string(error.kind.rawValue)
    out.string(error.reason)
    out.string(error.detail ?? "")
  }

  /// A child's result: the image, the renditions, or the pipeline's refusal (thrown).
  enum Result {
    case processed(ProcessedImage)
    case renditions([ProfileRendition])
  }

  static func read(_ bytes: [UInt8]) throws -> Result {
    var reader = WireReader(bytes)
    switch try reader.byte() {
    case processedTag:
      let jpeg = try reader.bytes()
      let width = Int(try reader.u32())
      let height = Int(try reader.u32())
      let format = try reader.string()
      var numbers: [Int] = []
      for _ in 0..<6 { numbers.append(Int(clamping: try reader.u64())) }
      guard let orientationSource = OrientationSource(rawValue: try reader.string()) else {
        throw SandboxError.protocolViolation("unknown orientation source")
      }
      let hasProfile = try reader.byte() != 0
      let profile = try reader.string()
      let found = try readStrings(&reader)
      let stripped = try readStrings(&reader)
      let lossless = try reader.byte() != 0
      let renditions = try readRenditions(&reader)
      var timings: [StageTiming] = []
      for _ in 0..<min(try reader.u32(), 64) {
        let stage = try reader.string()
        timings.append(StageTiming(stage: stage, duration: .nanoseconds(Int64(clamping: try reader.u64()))))
      }
      let source = SourceInfo(
        format: format, width: numbers[0], height: numbers[1], displayWidth: numbers[2],
        displayHeight: numbers[3],
        bytes: numbers[4], orientation: numbers[5], orientationSource: orientationSource,
        colourProfile: hasProfile ? profile : nil, metadataFound: found, metadataStripped: stripped)
      return .processed(
        ProcessedImage(
          jpeg: jpeg, width: width, height: height, source: source, losslessTransform: lossless,
          renditions: renditions, timings: timings))
    case renditionsTag:
      return .renditions(try readRenditions(&reader))
    case refusedTag:
      guard let kind = PipelineError.Kind(rawValue: try reader.string()) else {
        throw SandboxError.protocolViolation("unknown pipeline error")
      }
      let reason = try reader.string()
      let detail = try reader.string()
      throw PipelineError(kind, reason, detail: detail.isEmpty ? nil : detail)
    default:
      throw SandboxError.protocolViolation("unknown pipeline result")
    }
  }

  private static func writeStrings(_ values: [String], to out: inout WireWriter) {
    out.u32(UInt32(values.count))
    for value in values { out.string(value) }
  }

  private static func readStrings(_ reader: inout WireReader) throws -> [String] {
    var values: [String] = []
    for _ in 0..<min(try reader.u32(), 64) { values.append(try reader.string()) }
    return values
  }

  private static func writeRenditions(_ renditions: [ProfileRendition], to out: inout WireWriter) {
    out.u32(UInt32(renditions.count))
    for rendition in renditions {
      out.string(rendition.profile.rawValue)
      out.bytes(rendition.jpeg)
      out.u32(UInt32(rendition.width))
      out.u32(UInt32(rendition.height))
    }
  }

  private static func readRenditions(_ reader: inout WireReader) throws -> [ProfileRendition] {
    var renditions: [ProfileRendition] = []
    for _ in 0..<min(try reader.u32(), 64) {
      guard let profile = ModelProfile(rawValue: try reader.string()) else {
        throw SandboxError.protocolViolation("unknown profile")
      }
      let jpeg = try reader.bytes()
      renditions.append(
        ProfileRendition(
          profile: profile, jpeg: jpeg, width: Int(try reader.u32()), height: Int(try reader.u32())))
    }
    return renditions
  }
}
