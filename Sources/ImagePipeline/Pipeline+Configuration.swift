extension Pipeline {
  /// Settings of one pipeline; defaults follow DESIGN.md §1.
  public struct Configuration: Sendable {
    /// Longest output edge; larger images are fitted inside it, smaller ones are never upscaled.
    public var maxEdge = 2048
    /// JPEG quality, 1…100.
    public var quality = 85
    public var limits = Limits()
    /// libheif decoding threads per image (the worker pool already runs images in parallel).
    public var heifThreads = 1
    /// libavcodec threads per HEVC picture on the HEVC path, 1…64. One by default: the worker
    /// pool already decodes images side by side, and on a busy server more threads only add
    /// their overhead (~7 % more CPU at 2 on the iPhone XS photo); more help only a server with
    /// idle cores and few, large uploads.
    public var hevcThreads = 1
    /// Whether HEIF files the path rule gives the HEVC path are decoded there (`HEVCTileDecoder`);
    /// false sends every HEIF to libheif, which the differential tests keep to compare the two.
    var hevcFastPath = true
    /// Rewrite fitting sRGB/untagged JPEGs with `tjTransform` instead of re-encoding them.
    public var losslessJPEG = true
    /// How long one image may take, from the start of `process`: past it the run stops at its
    /// next check (between steps, between tiles or strips) with `deadline_exceeded`. 30 s is
    /// several times the slowest legitimate input here (the 200 MP HEIC, about 3.5 s of CPU on one
    /// core) even with every worker busy, yet answers before the common 60 s proxy and client
    /// timeouts, so a client hears 503 + Retry-After instead of a dropped connection.
    public var deadline: Duration = .seconds(30)
    /// The budget decodes reserve their estimated memory from.
    public var memoryBudget: MemoryBudget = .shared
    /// Whether YCbCr JPEGs are decoded, resized and oriented as planes (see `YCbCrPlanes`);
    /// false takes the RGB path, which tests keep to compare the two.
    var planarJPEG = true

    public init() {}

    /// Throws when a setting is out of range.
    public func validate() throws(ConfigurationError) {
      guard (1...65_500).contains(maxEdge) else {
        throw ConfigurationError("maxEdge must be 1…65500 (is \(maxEdge))")
      }
      guard (1...100).contains(quality) else {
        throw ConfigurationError("quality must be 1…100 (is \(quality))")
      }
      guard (1...64).contains(heifThreads) else {
        throw ConfigurationError("heifThreads must be 1…64 (is \(heifThreads))")
      }
      guard (1...64).contains(hevcThreads) else {
        throw ConfigurationError("hevcThreads must be 1…64 (is \(hevcThreads))")
      }
      guard deadline > .zero else {
        throw ConfigurationError("deadline must be positive (is \(deadline))")
      }
      if let problem = limits.validate() { throw ConfigurationError(problem) }
    }
  }

  /// A configuration that cannot work.
  public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
  }
}
