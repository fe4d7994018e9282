import ImagePipeline
import VideoPipeline

extension Application {
  /// Upload sizes, caching and retention of the attachments API.
  public struct AttachmentOptions: Sendable, Equatable {
    /// Largest request body of a `POST /v1/attachments` (raw or multipart), bytes → 413.
    public var maxUploadBytes = 64 << 20
    /// Most file parts in one multipart upload → 413 `too_many_parts`.
    public var maxParts = 10
    /// `Cache-Control: private, max-age=…` of a served image, seconds.
    public var cacheMaxAge = 86_400
    /// How long an attachment lives unless its tenant has an override, seconds (30 days).
    public var retention = 30 * 86_400
    /// Per-tenant retention overrides, seconds, applied to the index at start-up.
    public var tenantRetention: [String: Int] = [:]
    /// Seconds between two sweeps of expired attachments and unreferenced blobs.
    public var sweepInterval = 3600
    /// Longest edge of a stored image, pixels.
    public var maxEdge = 2048
    /// JPEG quality of stored images, 1…100.
    public var quality = 85
    /// Seconds one image may take in the pipeline before it stops with 503 `deadline_exceeded`
    /// (see `Pipeline.Configuration.deadline` for why 30).
    public var pipelineDeadline = 30.0
    /// `server.publicBaseURL`, normalised (see `PublicBaseURL`); "" keeps links relative.
    public var publicBaseURL = ""
    /// Which model profile requests that name none get.
    public var profiles = ProfileOptions()
    /// libavcodec threads per HEVC picture (see `Pipeline.Configuration.hevcThreads` for why 1).
    public var hevcThreads = 1
    /// Largest video upload, bytes → 413 `video_too_large_bytes`. Uploads are received up to
    /// the larger of this and `maxUploadBytes` (what a body is cannot be known before its first
    /// bytes); a file that turns out to be an image is then held to `maxUploadBytes` before it
    /// is decoded.
    public var maxVideoBytes = 512 << 20
    /// Most frames a video's record lists (one a second, at least 4).
    public var videoFrames = 16
    /// Longest edge of a video's poster and frames, pixels.
    public var videoFrameEdge = 1280

    public init() {}

    /// The largest body an upload may send: an image's or a video's limit, whichever is larger.
    public var maxTransferBytes: Int { max(maxUploadBytes, maxVideoBytes) }

    /// The MP4 rendition's settings (the defaults; its source limits are the stills').
    public func videoRenditionSettings() -> VideoRenditionSettings {
      var settings = VideoRenditionSettings()
      settings.limits.maxBytes = maxVideoBytes
      return settings
    }

    /// The stills settings these options describe.
    public func videoStillsSettings() -> VideoStillsSettings {
      var settings = VideoStillsSettings()
      settings.maximumFrames = videoFrames
      settings.minimumFrames = min(settings.minimumFrames, videoFrames)
      settings.maxEdge = videoFrameEdge
      settings.limits.maxBytes = maxVideoBytes
      return settings
    }

    /// `path` as a link a client can follow: absolute when `publicBaseURL` is set.
    func link(_ path: String) -> String { publicBaseURL + path }

    public func validate() throws(ConfigurationError) {
      guard maxUploadBytes > 0, maxVideoBytes > 0, videoFrames > 0, videoFrameEdge > 0, maxParts > 0,
        cacheMaxAge >= 0, retention > 0, sweepInterval > 0
      else {
        throw ConfigurationError("attachments: sizes, retention and intervals must be positive")
      }
      for (tenant, seconds) in tenantRetention where seconds <= 0 {
        throw ConfigurationError("storage.tenantRetention: \(tenant) must be a positive number of seconds")
      }
      guard pipelineDeadline > 0, pipelineDeadline <= 86_400 else {
        throw ConfigurationError("pipeline.deadline must be more than 0 and at most 86400 seconds")
      }
      do { _ = try Pipeline(configuration: pipelineConfiguration()) } catch {
        throw ConfigurationError("pipeline: \(error)")
      }
    }

    /// The pipeline settings these options describe (input cap = the upload cap).
    public func pipelineConfiguration() -> Pipeline.Configuration {
      var config = Pipeline.Configuration()
      config.maxEdge = maxEdge
      config.quality = quality
      config.limits.maxInputBytes = maxUploadBytes
      config.deadline = .seconds(min(max(pipelineDeadline, 0), 86_400))
      config.hevcThreads = hevcThreads
      return config
    }
  }

  /// Rate limits and upload caps per API key and per token user, and the users' daily quota.
  public struct LimitOptions: Sendable, Equatable {
    public var rate = RateLimiter.Configuration()
    public var uploads = UploadConcurrencyLimiter.Configuration()
    /// Per (tenant, user) of an upload token.
    public var userRate = RateLimiter.Configuration()
    /// Per (tenant, user): 10, so that a phone sending a picker's photos at once is not refused.
    public var userUploads = UploadConcurrencyLimiter.Configuration(maxConcurrentUploadsPerKey: 10)
    public var userQuota = UsageLimiter.Configuration()

    public init() {}

    public func validate() throws(ConfigurationError) {
      try rate.validate()
      try uploads.validate()
      try userRate.validate()
      try userUploads.validate()
      try userQuota.validate()
    }
  }
}
