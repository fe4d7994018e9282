import Foundation
import ImageContainers
import ImagePipeline
import MovieContainers
import PipelineSandbox
import Server
import Storage
import Uploads
import VideoPipeline

// A video upload becomes one attachment of kind `video`: its poster frame is the attachment's
// image (stored, served and described exactly as a photo's JPEG is, profiles included), and
// its frames are stored beside it as renditions named `frame-1`…`frame-N`, so they share the
// attachment's lifetime, deletion and sweeping. What the record says about the video itself
// (duration, upright size, rates, HDR, rotation, codec, audio, the frames' times) is kept as
// the record's `details`, written and read here only.
//
// Everything here runs on the bytes the upload engine received (a spooled file, mapped, never
// copied into memory whole): the outline is read and checked in this process (Swift), the
// frames are made in a sandbox child, and every JPEG it hands back is checked again before it
// is stored.
extension AttachmentService {
  /// A video's stills made in the sandbox, with what its header says.
  struct MadeVideo {
    var outline: MovieOutline
    var track: MovieTrack
    var stills: VideoStills
    var facts: VideoFacts
  }

  /// Stills in the sandbox, then the poster as the attachment and the frames as its renditions
  /// (`attachMotion`).
  func processVideo(
    _ bytes: UploadedFile, caller: AttachmentCaller, id: String?, cancellation: RequestCancellation
  ) throws -> StoredAttachment {
    let made = try makeStills(bytes, cancellation: cancellation)
    let source = Storage.SourceInfo(
      format: made.outline.formatName, width: made.track.codedWidth,
      height: made.track.codedHeight, bytes: bytes.count, orientation: made.track.orientation.rawValue,
      orientationSource: "display-matrix")
    let poster = made.stills.poster
    let record = try store.store(
      tenant: caller.principal.tenant, owner: caller.principal.user, bytes: poster.jpeg, width: poster.width,
      height: poster.height, source: source, kind: "video", details: made.facts.encoded(), id: id)
    return StoredAttachment(record: record, renditions: try attachMotion(made, bytes, to: record))
  }

  /// A Live Photo: the still is the attachment, exactly as a photo's (kind `live_photo`), and
  /// the movie its motion (`video`, `frames`, the MP4). A movie that cannot be made into stills
  /// leaves the still a plain photo and answers its own error at its part.
  func processLivePhoto(
    _ still: UploadedFile, movie: UploadedFile, caller: AttachmentCaller, id: String?, requestID: String,
    cancellation: RequestCancellation
  ) -> (still: Result<StoredAttachment, any Error>, movie: (any Error)?) {
    var motion: MadeVideo?
    var movieError: (any Error)?
    do { motion = try makeStills(movie, cancellation: cancellation) } catch {
      movieError = logged(error, requestID: requestID)
    }
    do {
      var stored = try processImage(
        still, caller: caller, id: id, cancellation: cancellation,
        kind: motion == nil ? "image" : "live_photo",
        details: motion?.facts.encoded())
      if let motion {
        let frames = try attachMotion(motion, movie, to: stored.record)
        stored.renditions.merge(frames) { $1 }
      }
      return (.success(stored), movieError)
    } catch {
      return (.failure(logged(error, requestID: requestID)), movieError)
    }
  }

  /// The outline read and checked here, the poster and frames made in a sandbox child.
  func makeStills(_ bytes: UploadedFile, cancellation: RequestCancellation) throws -> MadeVideo {
    guard let video else {
      throw PipelineError(.sandboxUnavailable, "no video decoding is configured")
    }
    let (outline, stills) = try bytes.withUnsafeBytes { input throws(VideoError) in
      try video.admittedStills(input, file: bytes.file, cancellation: cancellation)
    }
    metrics.recordInputFormat("video")
    guard let track = outline.videoTrack else { throw VideoError.refused(.noVideo) }
    return MadeVideo(
      outline: outline, track: track, stills: stills,
      facts: VideoFacts(outline: outline, track: track, stills: stills))
  }

  /// Stores a video's frames as renditions of `record`, keeps the source for the MP4 and queues
  /// its job. Anything that cannot be stored removes the attachment again: a record never lists
  /// fewer frames than it was made with, and nothing of a failed upload stays.
  func attachMotion(_ made: MadeVideo, _ bytes: UploadedFile, to record: AttachmentRecord) throws -> [String:
    Rendition]
  {
    var renditions: [String: Rendition] = [:]
    do {
      for (number, frame) in made.stills.frames.enumerated() {
        guard
          let row = try store.storeRendition(
            of: record, profile: VideoFacts.frameName(number + 1), bytes: frame.jpeg, width: frame.width,
            height: frame.height)
        else { throw AppError.notFound }  // deleted meanwhile: nothing to answer with
        renditions[row.profile] = row
      }
      // The MP4 is made after the answer, by whichever node's worker claims the job; the
      // source is kept as a rendition no URL names until then (VideoRenditionWorker). A spooled
      // upload is copied by the kernel: its pages never join the server's resident set.
      let (width, height) = (made.track.codedWidth, made.track.codedHeight)
      let kept =
        if let file = bytes.file {
          try store.storeRendition(
            of: record, profile: VideoFacts.sourceName, file: file.descriptor, range: file.range,
            scratchDirectory: scratchDirectory, width: width, height: height)
        } else {
          try bytes.withUnsafeBytes { input in
            try store.storeRendition(
              of: record, profile: VideoFacts.sourceName, buffer: input, width: width, height: height)
          }
        }
      guard kept != nil else { throw AppError.notFound }
      try store.index.enqueueVideoJob(attachment: record.id, tenant: record.tenant, now: store.now)
      videoJobs?.wake()
    } catch {
      _ = try? store.delete(tenant: record.tenant, id: record.id)
      throw error
    }
    return renditions
  }
}

extension AttachmentRecord {
  /// Whether it has motion: a video, or a Live Photo (frames, the MP4, `video` in its record).
  var hasMotion: Bool { kind == "video" || kind == "live_photo" }
}

/// Which parts of a multipart upload are a Live Photo's still and its movie: the content
/// identifier in the still's Apple MakerNote (tag 0x0011, JPEG or HEIC) equal to the movie's
/// `com.apple.quicktime.content.identifier`. Read from the headers only (Swift, nothing
/// decoded); the identifiers are used here and never stored or shown.
enum LivePhotoPairs {
  /// Still part index → movie part index; each part in one pair at most, first match first.
  static func find(_ parts: [UploadedFile]) -> [Int: Int] {
    var stills: [(Int, String)] = []
    var movies: [(Int, String)] = []
    for (index, part) in parts.enumerated() {
      part.withUnsafeBytes { bytes in
        switch FormatSniffer.sniff(bytes) {
        case .jpeg, .heif:
          let format = FormatSniffer.sniff(bytes)
          if let id = (try? ImageHeader.read(bytes, format: format))?.exif?.appleContentIdentifier,
            !id.isEmpty
          {
            stills.append((index, id))
          }
        case .video:
          if let id = (try? MovieOutlineReader.read(bytes))?.contentIdentifier, !id.isEmpty {
            movies.append((index, id))
          }
        default: break
        }
      }
    }
    var pairs: [Int: Int] = [:]
    var taken = Set<Int>()
    for (still, id) in stills {
      guard let movie = movies.first(where: { $0.1 == id && !taken.contains($0.0) })?.0 else { continue }
      pairs[still] = movie
      taken.insert(movie)
    }
    return pairs
  }
}

/// What a video's record says about it, kept as the record's `details` (JSON text).
struct VideoFacts: Codable, Equatable {
  /// Seconds, to the millisecond.
  var duration: Double
  /// The upright (displayed) size of the video track.
  var width: Int
  var height: Int
  /// The time scale over the most common frame duration, and frames over the duration.
  var frameRate: Double?
  var averageFrameRate: Double?
  var variableFrameRate: Bool
  /// `none`, `hlg`, `pq`, `dolby_vision_hlg`, `dolby_vision`.
  var hdr: String
  /// Degrees clockwise the coded picture is turned to be shown, and whether it is then mirrored
  /// left to right (the stills have both applied).
  var rotation: Int
  var mirrored: Bool
  var codec: String
  /// Whether a decodable audio track is there (an `apac`-only iPhone video has none).
  var audio: Bool
  /// Whether the stills were tone-mapped from HDR to SDR BT.709.
  var toneMapped: Bool
  var posterTime: Double
  /// The time of each frame, in the order of the renditions `frame-1`, `frame-2`, …
  var frameTimes: [Double]

  enum CodingKeys: String, CodingKey {
    case duration, width, height, hdr, rotation, mirrored, codec, audio
    case frameRate = "frame_rate"
    case averageFrameRate = "average_frame_rate"
    case variableFrameRate = "variable_frame_rate"
    case toneMapped = "tone_mapped"
    case posterTime = "poster_time"
    case frameTimes = "frame_times"
  }

  init(outline: MovieOutline, track: MovieTrack, stills: VideoStills) {
    duration = Self.milliseconds(outline.duration ?? track.seconds ?? 0)
    width = track.displayWidth
    height = track.displayHeight
    frameRate = track.nominalFrameRate.map(Self.milliseconds)
    averageFrameRate = track.averageFrameRate.map(Self.milliseconds)
    variableFrameRate = track.variableFrameRate
    hdr = track.hdr.rawValue
    (rotation, mirrored) = Self.turn(track.orientation)
    codec = track.codec?.rawValue ?? track.format.description
    audio = outline.tracks.contains { $0.kind == .audio && $0.audioCodecIsDecodable }
    toneMapped = stills.toneMapped
    posterTime = Self.milliseconds(stills.poster.time)
    frameTimes = stills.frames.map { Self.milliseconds($0.time) }
  }

  /// The rendition name of frame `number` (from 1).
  static func frameName(_ number: Int) -> String { "frame-\(number)" }
  /// The name of frame `number`'s rendition for `profile` (`frame-3.anthropic`), made when a
  /// provider's image rule sizes the frame differently.
  static func frameName(_ number: Int, profile: ModelProfile) -> String {
    frameName(number) + "." + profile.rawValue
  }
  /// The providers a frame lists sizes and links for (each takes images).
  static let frameProfiles: [ModelProfile] = [.anthropic, .openai, .gemini]
  /// The uploaded video itself, kept (never served: no URL names it) until its MP4 is made.
  static let sourceName = "video-source"
  /// The MP4 rendition's name.
  static let mp4Name = "video-mp4"

  /// The JSON text stored as the record's `details`.
  func encoded() -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    // Encoding a struct of numbers, strings and booleans cannot fail.
    return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
  }

  /// The facts of a stored record; nil for an image, or details this build cannot read.
  init?(details: String?) {
    guard let details, let decoded = try? JSONDecoder().decode(Self.self, from: Data(details.utf8)) else {
      return nil
    }
    self = decoded
  }

  /// EXIF orientation → (degrees clockwise, then mirrored left to right), the way a player
  /// shows it: a transpose (5, matrix [0 1; 1 0]) is a quarter turn clockwise then a mirror.
  static func turn(_ orientation: MovieOrientation) -> (Int, Bool) {
    switch orientation {
    case .up: (0, false)
    case .upMirrored: (0, true)
    case .down: (180, false)
    case .downMirrored: (180, true)
    case .leftMirrored: (90, true)
    case .right: (90, false)
    case .rightMirrored: (270, true)
    case .left: (270, false)
    }
  }

  static func milliseconds(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
}

/// What each provider would be charged for the video, by its own published rule.
enum VideoTokens {
  // Google, "Understand and count tokens" (ai.google.dev/gemini-api/docs/tokens, video
  // section): "Video files are converted to tokens at a fixed rate of 263 tokens per second"
  // and "audio files are converted at 32 tokens per second"; the video guide
  // (ai.google.dev/gemini-api/docs/video-understanding) samples 1 frame a second at 258 tokens
  // a frame. Decided: the frames are counted at 258 each for ⌈duration⌉ seconds, plus 32 a
  // second when there is audio (the 263 of the first quote is 258 + ~5 of timestamps, which
  // the second guide does not count). Gemini 3's default `media_resolution` charges 70 a frame;
  // the estimate stays with the rule the image profile uses (258 a tile).
  static let geminiFrameTokens = 258
  static let geminiAudioTokensPerSecond = 32

  /// Anthropic and OpenAI take no video: a chat backend sends them the frames as images, each
  /// at its profile's size and charged by that profile's image rule (`ModelProfile`); Gemini
  /// takes the video itself.
  static func estimate(_ facts: VideoFacts, frames: [(width: Int, height: Int)]) -> [(ModelProfile, Int)] {
    var estimates: [(ModelProfile, Int)] = []
    for profile in [ModelProfile.anthropic, .openai] {
      let total = frames.reduce(0) { sum, frame in
        let size = profile.size(ofStored: frame.width, frame.height)
        return sum + (profile.estimatedTokens(width: size.width, height: size.height) ?? 0)
      }
      estimates.append((profile, total))
    }
    let seconds = Int(facts.duration.rounded(.up))
    let gemini = seconds * geminiFrameTokens + (facts.audio ? seconds * geminiAudioTokensPerSecond : 0)
    estimates.append((.gemini, gemini))
    return estimates
  }
}
