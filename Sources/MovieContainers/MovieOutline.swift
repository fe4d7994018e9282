import ImageContainers

/// What the server learns from a movie's boxes (QuickTime `.mov`, ISO `.mp4`/`.m4v`) before a
/// single sample is decoded: enough to enforce the limits, pick the track and describe the
/// video, and nothing that needs a codec. Read by `MovieOutlineReader`, in pure Swift, in the
/// server process; the demuxing and decoding happen only in the sandbox.
public struct MovieOutline: Sendable, Equatable {
  /// `ftyp`'s major brand (`qt  ` for QuickTime, `isom`, `mp42`, `M4V ` …), or `webm` / `mkv `
  /// for an EBML file (its doc type).
  public var majorBrand: FourCC
  public var compatibleBrands: [FourCC] = []
  /// The movie's duration in seconds from `mvhd` (or `mehd` for a fragmented file); nil when the
  /// header gives none (0), as a fragmented file written live does.
  public var duration: Double?
  /// Whether the movie has fragments (`mvex` in `moov`): its samples are in `moof`s.
  public var isFragmented = false
  /// The tracks in file order.
  public var tracks: [MovieTrack] = []
  /// Where the file keeps text about its author, place or device: paths such as `moov/udta/©xyz`,
  /// `moov/meta`, `uuid` (XMP) or a timed-metadata track's `trak[2]:mebx`. Outputs carry none.
  public var metadataCarriers: [String] = []
  /// An iPhone's Live Photo content identifier (`com.apple.quicktime.content.identifier` in the
  /// `moov/meta` keys): the movie's half of the pairing with its still. Read to pair the two,
  /// never written into an output.
  public var contentIdentifier: String?
  /// Bytes of the whole file as the reader saw it.
  public var fileSize: Int

  public init(majorBrand: FourCC, fileSize: Int) {
    self.majorBrand = majorBrand
    self.fileSize = fileSize
  }

  /// Whether the brands say QuickTime (iPhones write `qt  `).
  public var isQuickTime: Bool { majorBrand == FourCC("qt  ") }

  /// The source format a record names: `mov` (QuickTime), `webm`, `mkv` (Matroska), else `mp4`
  /// (ISO BMFF: `.mp4`, `.m4v`).
  public var formatName: String {
    if isQuickTime { return "mov" }
    if majorBrand == FourCC("webm") { return "webm" }
    if majorBrand == FourCC("mkv ") { return "mkv" }
    return "mp4"
  }

  /// The track a still or a rendition is made from: the first video track with a known codec.
  public var videoTrack: MovieTrack? {
    tracks.first { $0.kind == .video && $0.codec != nil }
  }

  /// The audio track a rendition takes: the first one whose codec FFmpeg decodes (an iPhone 16's
  /// `apac` spatial audio is skipped; a file whose only audio is `apac` has no audio).
  public var audioTrack: MovieTrack? {
    tracks.first { $0.kind == .audio && $0.audioCodecIsDecodable }
  }
}

/// One `trak` of a movie.
public struct MovieTrack: Sendable, Equatable {
  public enum Kind: Sendable, Equatable {
    case video, audio
    /// Timed metadata (`meta` handler: iPhone `mebx`, GoPro `gpmd`, …).
    case timedMetadata
    case timecode
    case text
    case other
  }

  public enum Codec: String, Sendable, Equatable {
    case hevc, h264, vp9, vp8, av1
  }

  /// The HDR kind of a video track, from its colour description and Dolby Vision record.
  public enum HDR: String, Sendable, Equatable {
    case none
    /// BT.2100 HLG (transfer 18): iPhone HDR video.
    case hlg
    /// BT.2100 PQ (transfer 16): HDR10.
    case pq
    /// Dolby Vision with an HLG base layer (profile 8.4, iPhone): decoded as HLG.
    case dolbyVisionHLG = "dolby_vision_hlg"
    /// Dolby Vision with a PQ or SDR-compatible base layer (profiles 8.1, 8.2): decoded from the base.
    case dolbyVision = "dolby_vision"
  }

  public var id: UInt32 = 0
  public var kind: Kind = .other
  /// `hdlr`'s handler type (`vide`, `soun`, `meta`, `tmcd`, `text`, `sbtl` …).
  public var handler: FourCC = FourCC(0, 0, 0, 0)
  /// The first sample entry's format (`hvc1`, `avc1`, `dvh1`, `mp4a`, `apac`, `mebx` …).
  public var format: FourCC = FourCC(0, 0, 0, 0)
  /// Whether `tkhd` marks the track enabled.
  public var enabled = true
  /// The coded picture size from the visual sample entry (0 for other tracks).
  public var codedWidth = 0
  public var codedHeight = 0
  /// How the coded picture is turned to be shown (`tkhd`'s matrix).
  public var orientation: MovieOrientation = .up
  /// `mdhd`'s time scale and duration in it.
  public var timescale: UInt32 = 0
  public var mediaDuration: UInt64 = 0
  /// Samples in the track (`stsz`/`stz2`); 0 in a fragmented file's `moov`.
  public var sampleCount = 0
  /// Sync samples (`stss`); nil when every sample is one (no `stss`).
  public var syncSampleCount: Int?
  /// The most common sample duration, in the time scale (`stts`); 0 when unknown.
  public var commonSampleDelta: UInt32 = 0
  /// Whether the sample durations vary (more than one `stts` duration, the last one aside).
  public var variableFrameRate = false
  /// Whether a sample duration is 2³¹ or more: read as signed, as demuxers do, time runs backwards.
  public var timeRunsBackwards = false
  /// Whether every data reference is "in this file" (`dref` entries with flag 1).
  public var selfContained = true
  /// The colour description of a video track (`colr` nclx/nclc), if any.
  public var colour: MovieColour?
  /// The Dolby Vision configuration (`dvcC`/`dvvC`), if any.
  public var dolbyVision: MovieDolbyVision?
  /// Whether the sample entry holds a second HEVC layer (`lhvC`: MV-HEVC spatial video). Only
  /// the base layer is decoded.
  public var hasMultiviewLayer = false

  /// The codec of a video track, from its sample entry; nil for one we do not decode.
  public var codec: Codec? {
    switch format.description {
    case "hvc1", "hev1", "dvh1", "dvhe": .hevc
    case "avc1", "avc3", "dva1", "dvav": .h264
    case "vp09": .vp9
    case "vp08": .vp8
    case "av01": .av1
    default: nil
    }
  }

  /// Whether FFmpeg 5.1 decodes this audio track's format.
  public var audioCodecIsDecodable: Bool {
    ["mp4a", "alac", "Opus", "vorb", "fLaC", "ac-3", "ec-3", "lpcm", "sowt", "twos", "ulaw", "alaw", ".mp3"]
      .contains(format.description)
  }

  /// The track's duration in seconds (`mdhd`); nil without a time scale.
  public var seconds: Double? {
    timescale > 0 ? Double(mediaDuration) / Double(timescale) : nil
  }

  /// The display size: the coded size turned by the orientation.
  public var displayWidth: Int { orientation.swapsDimensions ? codedHeight : codedWidth }
  public var displayHeight: Int { orientation.swapsDimensions ? codedWidth : codedHeight }

  /// Average frames per second: samples over the media duration.
  public var averageFrameRate: Double? {
    guard let seconds, seconds > 0, sampleCount > 0 else { return nil }
    return Double(sampleCount) / seconds
  }

  /// The nominal frame rate: the time scale over the most common sample duration.
  public var nominalFrameRate: Double? {
    commonSampleDelta > 0 && timescale > 0 ? Double(timescale) / Double(commonSampleDelta) : nil
  }

  /// The HDR kind, from the Dolby Vision record first, then the transfer function.
  public var hdr: HDR {
    if let dolbyVision {
      // Compatibility id 4: the base layer is HLG (profile 8.4).
      return dolbyVision.compatibility == 4 ? .dolbyVisionHLG : .dolbyVision
    }
    switch colour?.transfer {
    case 18: return .hlg
    case 16: return .pq
    default: return .none
    }
  }

  public init() {}
}

/// A Dolby Vision decoder configuration record: the profile and the base layer's compatibility
/// id (4: HLG, as iPhones write in profile 8.4).
public struct MovieDolbyVision: Sendable, Equatable {
  public var profile: UInt8
  public var compatibility: UInt8

  public init(profile: UInt8, compatibility: UInt8) {
    self.profile = profile
    self.compatibility = compatibility
  }
}

/// A video track's colour description (ISO/IEC 23091-2 code points, as in `colr` `nclx`).
public struct MovieColour: Sendable, Equatable {
  public var primaries: UInt16
  public var transfer: UInt16
  public var matrix: UInt16
  public var fullRange: Bool

  public init(primaries: UInt16, transfer: UInt16, matrix: UInt16, fullRange: Bool) {
    self.primaries = primaries
    self.transfer = transfer
    self.matrix = matrix
    self.fullRange = fullRange
  }
}
