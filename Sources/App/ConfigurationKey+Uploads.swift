import Foundation

// The upload settings (sizes, video, stored images, spooling, the resumable engine): in their
// own list so the core table stays readable; `ConfigurationKey.all` keeps their place.
extension ConfigurationKey {
  static let uploadKeys: [ConfigurationKey] = [
    .integer(
      "uploads.maxBytes", env: "ATTACHD_MAX_UPLOAD_BYTES", flag: nil,
      summary: "largest upload body in bytes (→ 413)", range: 1...(1 << 40), \.attachments.maxUploadBytes),
    .integer(
      "uploads.maxParts", env: "ATTACHD_MAX_PARTS", flag: nil,
      summary: "most file parts in one multipart upload (→ 413)", range: 1...1000, \.attachments.maxParts),
    .integer(
      "uploads.maxVideoBytes", env: "ATTACHD_MAX_VIDEO_BYTES", flag: nil,
      summary: "largest video upload in bytes (→ 413 video_too_large_bytes)", range: 1...(1 << 40),
      \.attachments.maxVideoBytes),
    .integer(
      "video.maxFrames", env: "ATTACHD_VIDEO_MAX_FRAMES", flag: nil,
      summary: "most frames a video's record lists (one a second, at least 4)", range: 1...64,
      \.attachments.videoFrames),
    .integer(
      "video.frameEdge", env: "ATTACHD_VIDEO_FRAME_EDGE", flag: nil,
      summary: "longest edge of a video's poster and frames, px", range: 16...4096,
      \.attachments.videoFrameEdge),
    .integer(
      "uploads.maxEdge", env: "ATTACHD_MAX_EDGE", flag: nil, summary: "longest edge of a stored image, px",
      range: 1...65_500, \.attachments.maxEdge),
    .integer(
      "uploads.quality", env: "ATTACHD_JPEG_QUALITY", flag: nil, summary: "JPEG quality of stored images",
      range: 1...100, \.attachments.quality),
    .integer(
      "uploads.spoolThreshold", env: "ATTACHD_SPOOL_THRESHOLD", flag: nil,
      summary: "plain bodies over this many bytes spool to disk instead of memory", range: 0...(1 << 40),
      \.uploads.spoolThreshold),
    .seconds(
      "uploads.resumableTTL", env: "ATTACHD_RESUMABLE_TTL", flag: nil,
      summary: "seconds a resumable upload lives after its creation (1 s … 30 days)", \.uploads.resumableTTL),
    .integer(
      "uploads.writeBufferBytes", env: "ATTACHD_UPLOAD_BUFFER_BYTES", flag: nil,
      summary: "bytes one streaming upload buffers before writing them out", range: (4 << 10)...(256 << 20),
      \.uploads.writeBufferBytes),
    .integer(
      "uploads.commitBytes", env: "ATTACHD_UPLOAD_COMMIT_BYTES", flag: nil,
      summary: "bytes written between two durable commits within one request (0 = every write)",
      range: 0...(1 << 40), \.uploads.commitBytes),
    .seconds(
      "uploads.commitInterval", env: "ATTACHD_UPLOAD_COMMIT_INTERVAL", flag: nil,
      summary: "seconds received bytes may wait before a commit acknowledges them", \.uploads.commitInterval),
    ConfigurationKey(
      path: "uploads.syncOffsetCommits", environment: "ATTACHD_UPLOAD_SYNC_OFFSETS", flag: nil,
      defaultText: "false", summary: "offset commits also wait for the index fsync (survive power loss)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.uploads.syncOffsetCommits = try value.boolean()
      }),
    .seconds(
      "uploads.leaseDuration", env: "ATTACHD_UPLOAD_LEASE_DURATION", flag: nil,
      summary: "seconds an upload's writer lease lasts unrenewed: how long a dead node's uploads stay locked",
      \.uploads.leaseDuration),
    .integer(
      "uploads.ioThreads", env: "ATTACHD_UPLOAD_IO_THREADS", flag: nil,
      summary: "threads for upload file and index work", range: 1...256, \.uploads.ioThreads),
  ]
}
