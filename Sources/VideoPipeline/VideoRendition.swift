import ImageCodecs
import MovieContainers
internal import VideoFrames

/// How the MP4 rendition is made.
public struct VideoRenditionSettings: Sendable, Equatable {
  /// The long edge (the short one follows, both even).
  public var maxEdge = 1280
  /// Frames per second at the most; the output is constant at the source's rate, capped.
  public var maxFrameRate = 30
  /// x264's constant rate factor and preset.
  public var crf = 23
  public var preset = "veryfast"
  /// Bytes the rendition may take.
  public var maxOutputBytes = 256 << 20
  public var limits = MovieLimits()

  public init() {}
}

/// An MP4 for providers that take video: H.264 High 8-bit 4:2:0 SDR (HDR tone-mapped as the
/// stills are), upright pixels with no display matrix, within `maxEdge`, constant frame rate up
/// to `maxFrameRate`, AAC-LC stereo from the first decodable audio track (none if there is none),
/// `moov` first, and nothing else: `MP4Finisher` drops what the muxer leaves, and
/// `MovieOutputCheck` proves it before the bytes leave. Runs in the decode sandbox's child.
public enum VideoRenditionMaker {
  /// `inputIsMapped`: as for `VideoStillsMaker.make` — a 400 MB movie read through then costs
  /// the process a few MB of its pages, not 400 MB.
  public static func make(
    _ input: UnsafeRawBufferPointer, settings: VideoRenditionSettings = VideoRenditionSettings(),
    inputIsMapped: Bool = false
  )
    throws(VideoError) -> [UInt8]
  {
    let outline: MovieOutline
    do {
      outline = try MovieAdmission.admit(input, limits: settings.limits)
    } catch {
      throw .refused(error)
    }
    guard let video = outline.videoTrack, let videoIndex = outline.tracks.firstIndex(of: video) else {
      throw .refused(.noVideo)
    }
    let audioIndex = outline.audioTrack.flatMap { outline.tracks.firstIndex(of: $0) }
    let (width, height) = evenFit((video.displayWidth, video.displayHeight), maxEdge: settings.maxEdge)
    let sourceRate = video.nominalFrameRate ?? video.averageFrameRate ?? Double(settings.maxFrameRate)
    var options = VideoRenditionOptions()
    options.video_stream = Int32(videoIndex)
    options.audio_stream = Int32(audioIndex ?? -1)
    options.declared_transfer = Int32(video.colour?.transfer ?? 2)
    options.width = Int32(width)
    options.height = Int32(height)
    options.orientation = Int32(video.orientation.rawValue)
    options.frame_rate = Int32(min(settings.maxFrameRate, max(1, Int(sourceRate.rounded()))))
    options.crf = Int32(settings.crf)
    options.max_output_bytes = settings.maxOutputBytes
    options.release_read_input = inputIsMapped ? 1 : 0
    if let failure = VideoStillsMaker.preload() {
      throw .pipeline(.init(.internal, "video libraries", detail: failure))
    }
    AVCodecLog.installIfNeeded()
    var output: UnsafeMutablePointer<UInt8>?
    var size = 0
    var error = [CChar](repeating: 0, count: 256)
    let code = settings.preset.withCString { preset in
      options.preset = preset
      return VideoRendition_make(
        input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, options, &output, &size, &error,
        error.count)
    }
    defer { VideoRendition_free(output) }
    guard code >= 0, let output else {
      throw .undecodable(
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    let finished: [UInt8]
    do {
      finished = try MP4Finisher.finish(UnsafeRawBufferPointer(start: output, count: size))
      try MovieOutputCheck.verify(finished)
    } catch {
      throw .pipeline(.init(.internal, "the rendition is not clean", detail: "\(error)"))
    }
    return finished
  }

  /// The display size fitted into `maxEdge`, never upscaled, both sides even (4:2:0).
  static func evenFit(_ size: (Int, Int), maxEdge: Int) -> (Int, Int) {
    let (w, h) = VideoStillsMaker.fit(size, maxEdge: maxEdge)
    return (max(2, w & ~1), max(2, h & ~1))
  }
}
