import ImageCodecs
import ImagePipeline
import MovieContainers
internal import VideoFrames

/// One still of a video: the frame shown at `time`, made a clean JPEG by the still pipeline.
public struct VideoStill: Sendable, Equatable {
  /// Seconds from the start.
  public var time: Double
  public var jpeg: [UInt8]
  /// Upright size.
  public var width: Int
  public var height: Int

  public init(time: Double, jpeg: [UInt8], width: Int, height: Int) {
    self.time = time
    self.jpeg = jpeg
    self.width = width
    self.height = height
  }
}

/// The stills of one video: a poster and frames evenly spaced over its duration.
public struct VideoStills: Sendable {
  public var poster: VideoStill
  public var frames: [VideoStill]
  /// Whether the stills were tone-mapped from HDR (HLG, PQ, Dolby Vision's base layer).
  public var toneMapped: Bool

  public init(poster: VideoStill, frames: [VideoStill], toneMapped: Bool) {
    self.poster = poster
    self.frames = frames
    self.toneMapped = toneMapped
  }
}

/// How many stills and how large.
public struct VideoStillsSettings: Sendable, Equatable {
  /// Frames at the least and at the most; in between, one a second.
  public var minimumFrames = 4
  public var maximumFrames = 16
  /// The long edge of each still (the record's frames for models; photos use `maxEdge`).
  public var maxEdge = 1280
  public var limits = MovieLimits()

  public init() {}

  /// The frame count for a video of `duration` seconds: one a second, within the bounds.
  public func frameCount(duration: Double) -> Int {
    min(maximumFrames, max(minimumFrames, Int(duration.rounded(.up))))
  }

  /// The times of the frames: the middles of `count` equal spans of the duration (never the
  /// first or last instant, often black or a fade).
  public func frameTimes(duration: Double) -> [Double] {
    let count = frameCount(duration: duration)
    return (0..<count).map { (Double($0) + 0.5) * duration / Double(count) }
  }

  /// The poster's time: one second in, or the middle of a shorter video.
  public func posterTime(duration: Double) -> Double { min(1, duration / 2) }
}

/// Why a video gave no stills.
public enum VideoError: Error, Equatable, Sendable {
  /// Refused by the header check before anything was decoded.
  case refused(MovieRefusal)
  /// The container or the stream broke while decoding (`corrupt`).
  case undecodable(String)
  /// The still pipeline refused a frame.
  case pipeline(PipelineError)

  /// The stable code a client sees.
  public var code: String {
    switch self {
    case .refused(let refusal): refusal.code
    case .undecodable: "corrupt"
    case .pipeline(let error): error.code
    }
  }
}

/// Makes the stills of a video: the outline is read and checked (`MovieAdmission`), the chosen
/// frames are decoded by libavformat + libavcodec over the bytes in memory (`VideoFrames`), HDR
/// ones tone-mapped, and each goes through the still pipeline's resize, orientation, colour and
/// encode steps and its JPEG check. Runs in the decode sandbox's child (the `video.stills` job).
public enum VideoStillsMaker {
  /// `inputIsMapped`: `input` is a read-only mapping of a file or memory file (never anonymous
  /// memory), whose pages the demuxer has read past may be given back as it goes.
  public static func make(
    _ input: UnsafeRawBufferPointer, pipeline: Pipeline,
    settings: VideoStillsSettings = VideoStillsSettings(),
    inputIsMapped: Bool = false
  ) throws(VideoError) -> VideoStills {
    let outline: MovieOutline
    do {
      outline = try MovieAdmission.admit(input, limits: settings.limits)
    } catch {
      throw .refused(error)
    }
    guard let video = outline.videoTrack, let trackIndex = outline.tracks.firstIndex(of: video),
      let duration = outline.duration ?? video.seconds
    else { throw .refused(.noVideo) }
    let orientation = video.orientation
    // Frames that go through FFmpeg's filter (HDR, not 8-bit) are scaled there, straight to the
    // still's size; 8-bit frames come as decoded, for the pipeline's own resampler.
    let display = (video.displayWidth, video.displayHeight)
    let fitted = fit(display, maxEdge: settings.maxEdge)
    let stored = orientation.swapsDimensions ? (fitted.1, fitted.0) : fitted
    var options = VideoFramesOptions()
    options.stream = Int32(trackIndex)
    options.declared_transfer = Int32(video.colour?.transfer ?? 2)
    options.target_width = Int32(stored.0)
    options.target_height = Int32(stored.1)
    options.release_read_input = inputIsMapped ? 1 : 0
    // libav's own logger would write to standard error (and ask if it is a terminal first).
    if let failure = preload() {
      throw .pipeline(PipelineError(.internal, "video libraries", detail: failure))
    }
    AVCodecLog.installIfNeeded()
    let frames = try FrameSource(input, options: options)
    // Half the spacing: a keyframe that close to a time stands for it (no decoding up to it).
    let times = settings.frameTimes(duration: duration)
    let tolerance = duration / Double(times.count) / 2
    var toneMapped = false
    func still(at time: Double, tolerance: Double) throws(VideoError) -> VideoStill {
      let picture = try frames.frame(at: time, tolerance: tolerance)
      toneMapped = toneMapped || picture.tone_mapped != 0
      let made: FrameStill
      do {
        made = try pipeline.still(
          fromFrame: try planes(of: picture), orientation: orientation.rawValue, maxEdge: settings.maxEdge)
      } catch {
        throw .pipeline(error)
      }
      return VideoStill(
        time: Double(picture.time_us) / 1_000_000, jpeg: made.jpeg, width: made.width, height: made.height)
    }
    let poster = try still(at: settings.posterTime(duration: duration), tolerance: 0)
    var stills: [VideoStill] = []
    for time in times {
      stills.append(try still(at: time, tolerance: tolerance))
    }
    return VideoStills(poster: poster, frames: stills, toneMapped: toneMapped)
  }

  /// The display size fitted into `maxEdge`, never upscaled, sides even where the source's are.
  static func fit(_ size: (Int, Int), maxEdge: Int) -> (Int, Int) {
    let (w, h) = size
    let longest = max(w, h)
    guard longest > maxEdge else { return (w, h) }
    let scale = Double(maxEdge) / Double(longest)
    return (max(1, Int((Double(w) * scale).rounded())), max(1, Int((Double(h) * scale).rounded())))
  }

  /// The picture's planes copied into the pipeline's buffers (the frame's memory belongs to
  /// FFmpeg and is reused by the next call).
  static func planes(of picture: VideoFramesPicture) throws(PipelineError) -> YCbCrPlanes {
    let width = Int(picture.width)
    let height = Int(picture.height)
    let shiftX = Int(picture.chroma_shift_x)
    let shiftY = Int(picture.chroma_shift_y)
    let chromaWidth = (width + (1 << shiftX) - 1) >> shiftX
    let chromaHeight = (height + (1 << shiftY) - 1) >> shiftY
    func plane(_ index: Int, _ w: Int, _ h: Int) -> PixelBuffer {
      let stride = Int(index == 0 ? picture.strides.0 : index == 1 ? picture.strides.1 : picture.strides.2)
      let base = index == 0 ? picture.planes.0 : index == 1 ? picture.planes.1 : picture.planes.2
      var bytes = [UInt8](repeating: 0, count: w * h)
      if let base {
        bytes.withUnsafeMutableBytes { out in
          for row in 0..<h {
            (out.baseAddress! + row * w).copyMemory(from: base + row * stride, byteCount: w)
          }
        }
      }
      return PixelBuffer(width: w, height: h, layout: .gray, bytes: bytes)
    }
    let matrix: YCbCrMatrix =
      switch picture.matrix {
      case 1: .bt709
      case 9: .bt2020NonConstant
      default: .bt601
      }
    let siting =
      picture.chroma_location >= 0
      ? ChromaSiting(h273ChromaLocation: Int(picture.chroma_location)) ?? .centred
        // Unknown: video's default, co-sited left and centred vertically.
      : ChromaSiting(horizontal: .cosited, vertical: .centred)
    return YCbCrPlanes(
      luma: plane(0, width, height), cb: plane(1, chromaWidth, chromaHeight),
      cr: plane(2, chromaWidth, chromaHeight),
      subsampling: (1 << shiftX, 1 << shiftY), matrix: matrix,
      range: picture.full_range != 0 ? .full : .limited,
      siting: siting)
  }
}

/// One open movie in FFmpeg: owns the `VideoFramesSource`, closed when this goes.
final class FrameSource {
  private var source: OpaquePointer?

  init(_ input: UnsafeRawBufferPointer, options: VideoFramesOptions) throws(VideoError) {
    var error = [CChar](repeating: 0, count: 256)
    let code = VideoFrames_open(
      input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, options, &source, &error,
      error.count)
    guard code >= 0, source != nil else {
      throw .undecodable(
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
  }

  deinit { VideoFrames_close(source) }

  func frame(at time: Double, tolerance: Double) throws(VideoError) -> VideoFramesPicture {
    var picture = VideoFramesPicture()
    var error = [CChar](repeating: 0, count: 256)
    let code = VideoFrames_frameAt(
      source, Int64(time * 1_000_000), Int64(tolerance * 1_000_000), &picture, &error, error.count)
    guard code >= 0 else {
      throw .undecodable(
        String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return picture
  }
}

extension VideoStillsMaker {
  /// Opens libavformat, libavfilter and libavcodec now (the sandbox's helper, before it locks
  /// down): nil, or why they could not be opened.
  public static func preload() -> String? {
    VideoFrames_preload().map { String(cString: $0) }
  }
}
