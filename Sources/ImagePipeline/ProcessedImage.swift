/// One pipeline stage and how long it took.
public struct StageTiming: Sendable, Equatable {
  public let stage: String
  public let duration: Duration

  public init(stage: String, duration: Duration) {
    self.stage = stage
    self.duration = duration
  }
}

/// What the pipeline learned about its input: for the stored record, `inspect` and logs.
public struct SourceInfo: Sendable {
  /// `jpeg`, `png`, `gif`, `webp`, `heif` or `avif`.
  public var format: String
  /// Stored size, before orientation.
  public var width: Int
  public var height: Int
  /// Size once shown upright (before fitting into `maxEdge`).
  public var displayWidth: Int
  public var displayHeight: Int
  public var bytes: Int
  /// The orientation as an EXIF value (1…8), whichever source it came from.
  public var orientation: Int
  public var orientationSource: OrientationSource
  /// The embedded colour profile's description (`Display P3`, `nclx BT.709`, …); nil when untagged.
  public var colourProfile: String?
  /// Kinds of metadata found in the input (`exif`, `gps`, `xmp`, …); the output carries none.
  public var metadataFound: [String]
  /// Kinds of metadata that were dropped (everything found).
  public var metadataStripped: [String]

  public init(
    format: String, width: Int, height: Int, displayWidth: Int, displayHeight: Int, bytes: Int,
    orientation: Int,
    orientationSource: OrientationSource, colourProfile: String?, metadataFound: [String],
    metadataStripped: [String]
  ) {
    self.format = format
    self.width = width
    self.height = height
    self.displayWidth = displayWidth
    self.displayHeight = displayHeight
    self.bytes = bytes
    self.orientation = orientation
    self.orientationSource = orientationSource
    self.colourProfile = colourProfile
    self.metadataFound = metadataFound
    self.metadataStripped = metadataStripped
  }
}

/// The pipeline's result: a clean JPEG and the facts about its source.
public struct ProcessedImage: Sendable {
  /// The output JPEG: only JFIF/DQT/SOF/DHT/DRI/SOS/EOI, verified.
  public var jpeg: [UInt8]
  public var width: Int
  public var height: Int
  public var source: SourceInfo
  /// Whether the JPEG was rewritten losslessly (`tjTransform`) instead of re-encoded.
  public var losslessTransform: Bool
  /// The model-profile renditions asked for (none for a profile of the output's own size).
  public var renditions: [ProfileRendition] = []
  public var timings: [StageTiming]

  public init(
    jpeg: [UInt8], width: Int, height: Int, source: SourceInfo, losslessTransform: Bool,
    renditions: [ProfileRendition] = [], timings: [StageTiming]
  ) {
    self.jpeg = jpeg
    self.width = width
    self.height = height
    self.source = source
    self.losslessTransform = losslessTransform
    self.renditions = renditions
    self.timings = timings
  }
}
