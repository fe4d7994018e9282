/// The limits a movie must meet before anything of it is decoded. The defaults fit what a phone
/// picker hands over (a 4K 60 fps clip of a few minutes; slow motion at 240 fps) and bound the
/// decode work a single upload can ask for.
public struct MovieLimits: Sendable, Equatable {
  /// `uploads.maxVideoBytes`: the whole file.
  public var maxBytes = 512 << 20
  /// Seconds of video.
  public var maxDuration = 300.0
  /// Pixels per frame: 3840 × 2160 (4K UHD), in either orientation.
  public var maxFramePixels = 3840 * 2160
  /// The longer coded edge: 4096 (DCI 4K), so a 4096 × 2160 clip passes and an 8K one does not.
  public var maxEdge = 4096
  /// Frames per second, average or nominal.
  public var maxFrameRate = 240.0
  /// Tracks of any kind.
  public var maxTracks = 16

  public init() {}
}

/// Why a movie is refused before decoding; `code` is the stable problem code clients see.
public enum MovieRefusal: Error, Equatable, Sendable {
  /// Larger than `maxBytes`.
  case tooLargeBytes(Int)
  /// Longer than `maxDuration` seconds.
  case tooLong(Double)
  /// No duration in the header (a fragmented file written live, a zero `mvhd`).
  case durationUnknown
  /// A frame larger than `maxFramePixels` or an edge over `maxEdge`.
  case frameTooLarge(width: Int, height: Int)
  /// A frame rate above `maxFrameRate`.
  case frameRateTooHigh(Double)
  /// More tracks than `maxTracks`.
  case tooManyTracks(Int)
  /// No video track whose codec is HEVC, H.264, VP9, VP8 or AV1 (an audio file, a codec we lack).
  case noVideo
  /// A data reference to a file outside this one.
  case externalReference
  /// A sample's time runs backwards.
  case timestampsBackwards
  /// The container cannot be read: cut short, no `moov`, a box that does not fit.
  case truncated
  case corrupt(String)

  public var code: String {
    switch self {
    case .tooLargeBytes: "video_too_large_bytes"
    case .tooLong: "video_too_long"
    case .durationUnknown: "video_duration_unknown"
    case .frameTooLarge: "video_frame_too_large"
    case .frameRateTooHigh: "video_frame_rate_too_high"
    case .tooManyTracks: "video_too_many_tracks"
    case .noVideo: "video_no_video_track"
    case .externalReference: "video_external_reference"
    case .timestampsBackwards: "video_timestamps_backwards"
    case .truncated: "truncated"
    case .corrupt: "corrupt"
    }
  }

  /// A sentence for people.
  public var reason: String {
    switch self {
    case .tooLargeBytes(let bytes): "the video is \(bytes) bytes, more than allowed"
    case .tooLong(let seconds): "the video is \(Int(seconds)) s long, longer than allowed"
    case .durationUnknown: "the video's header gives no duration"
    case .frameTooLarge(let width, let height):
      "the video's frames are \(width)×\(height), larger than allowed"
    case .frameRateTooHigh(let rate): "the video has \(Int(rate)) frames a second, more than allowed"
    case .tooManyTracks(let count): "the video has \(count) tracks, more than allowed"
    case .noVideo: "there is no HEVC, H.264, VP9, VP8 or AV1 video track"
    case .externalReference: "the video refers to data in another file"
    case .timestampsBackwards: "the video's frame times run backwards"
    case .truncated: "the video is cut short"
    case .corrupt(let what): "the video's container is malformed (\(what))"
    }
  }

  /// The HTTP status the code is answered with: 413 for what is too big, 415 for what is not a
  /// video we take, 422 for what is broken.
  public var status: Int {
    switch self {
    case .tooLargeBytes, .tooLong, .frameTooLarge, .frameRateTooHigh, .tooManyTracks: 413
    case .noVideo: 415
    case .durationUnknown, .externalReference, .timestampsBackwards, .truncated, .corrupt: 422
    }
  }
}

/// The header check for movies, in the order imgproxy's checker runs its own: bytes, then
/// structure, then what the headers say about the work (duration, frame size, rate), each
/// before a single sample is read.
public enum MovieAdmission {
  /// Reads the outline of `bytes` and checks it against `limits`; returns the outline to decode.
  public static func admit(_ bytes: UnsafeRawBufferPointer, limits: MovieLimits) throws(MovieRefusal)
    -> MovieOutline
  {
    guard bytes.count <= limits.maxBytes else { throw .tooLargeBytes(bytes.count) }
    let outline: MovieOutline
    do {
      outline = try MovieOutlineReader.read(bytes)
    } catch {
      switch error {
      case .notAMovie: throw .noVideo
      case .truncated, .noMovieBox: throw .truncated
      case .badBox(let reason): throw .corrupt(reason)
      case .tooManyTracks(let count): throw .tooManyTracks(count)
      case .movieBoxTooLarge(let size): throw .corrupt("moov of \(size) bytes")
      }
    }
    try check(outline, limits: limits)
    return outline
  }

  /// The limits on an outline already read.
  public static func check(_ outline: MovieOutline, limits: MovieLimits) throws(MovieRefusal) {
    guard outline.tracks.count <= limits.maxTracks else { throw .tooManyTracks(outline.tracks.count) }
    guard let video = outline.videoTrack else { throw .noVideo }
    guard outline.tracks.allSatisfy(\.selfContained) else { throw .externalReference }
    let duration = outline.duration ?? video.seconds
    guard let duration, duration > 0 else { throw .durationUnknown }
    guard duration <= limits.maxDuration else { throw .tooLong(duration) }
    let (w, h) = (video.codedWidth, video.codedHeight)
    guard w > 0, h > 0 else { throw .corrupt("video track without a frame size") }
    // The edge first: a WebM's pixel width is a free-sized integer, and the area of two
    // unchecked ones overflows.
    guard max(w, h) <= limits.maxEdge, w * h <= limits.maxFramePixels else {
      throw .frameTooLarge(width: w, height: h)
    }
    if video.timeRunsBackwards { throw .timestampsBackwards }
    let rate = max(video.averageFrameRate ?? 0, video.nominalFrameRate ?? 0)
    guard rate <= limits.maxFrameRate else { throw .frameRateTooHigh(rate) }
  }
}
