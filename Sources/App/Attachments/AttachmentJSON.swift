import HTTP
import ImagePipeline
import Storage

/// The JSON record of DESIGN.md §2, written straight into bytes.
enum AttachmentJSON {
  /// `{"id":…,"url":…,…,"source":{…},"created_at":…,"expires_at":…,"owner":…[,"signed_url":…],
  /// "profile":…,"estimated_tokens":…,"profiles":{…}}`: the top level describes the image of
  /// `view.profile`, `profiles` every profile's.
  static func record(_ view: RecordView, into out: inout [UInt8]) {
    let record = view.record
    let described = view.image(of: view.profile)
    var object = ObjectWriter()
    object.string("id", record.id)
    object.string("url", view.link(view.path(view.profile)))
    object.string("content_type", record.contentType)
    object.int("width", described.width)
    object.int("height", described.height)
    object.int("bytes", described.bytes ?? record.bytes)
    object.string("sha256", (described.blob ?? record.blob).hex)
    var source = ObjectWriter()
    source.string("format", record.source.format)
    source.int("width", record.source.width)
    source.int("height", record.source.height)
    source.int("bytes", record.source.bytes)
    source.int("orientation", record.source.orientation)
    source.optional("orientation_source", record.source.orientationSource)
    source.optional("colour_profile", record.source.colourProfile)
    object.raw("source", source.close())
    object.string("created_at", timestamp(record.createdAt.timeIntervalSince1970))
    object.string("expires_at", timestamp(record.expiresAt.timeIntervalSince1970))
    // The end user of the token that uploaded it; null for a tenant-key upload.
    object.optional("owner", record.owner)
    if let signed = view.signedPath {
      let query = view.profile == view.tenantDefault ? "" : "&profile=" + view.profile.rawValue
      object.string("signed_url", view.link(signed + query))
    }
    object.string("profile", view.profile.rawValue)
    object.optionalInt(
      "estimated_tokens", view.profile.estimatedTokens(width: described.width, height: described.height))
    var profiles = ObjectWriter()
    for profile in ModelProfile.allCases {
      let image = view.image(of: profile)
      var entry = ObjectWriter()
      entry.int("width", image.width)
      entry.int("height", image.height)
      entry.optionalInt("estimated_tokens", profile.estimatedTokens(width: image.width, height: image.height))
      entry.string("url", view.link(view.path(profile, explicit: true)))
      entry.optionalInt("bytes", image.bytes)
      entry.optional("sha256", image.blob?.hex)
      profiles.raw(profile.rawValue, entry.close())
    }
    object.raw("profiles", profiles.close())
    object.string("kind", record.kind)
    if let facts = VideoFacts(details: record.details) { video(facts, view, into: &object) }
    out.append(contentsOf: object.close())
  }

  /// A video's `video` object (what it is, and what each provider would be charged for it) and
  /// its `frames`, each with its own link; the poster is the record's image itself.
  private static func video(_ facts: VideoFacts, _ view: RecordView, into object: inout ObjectWriter) {
    let frames = facts.frameTimes.indices.compactMap { index -> (Double, Rendition)? in
      view.renditions[VideoFacts.frameName(index + 1)].map { (facts.frameTimes[index], $0) }
    }
    var video = ObjectWriter()
    video.number("duration", facts.duration)
    video.int("width", facts.width)
    video.int("height", facts.height)
    video.optionalNumber("frame_rate", facts.frameRate)
    video.optionalNumber("average_frame_rate", facts.averageFrameRate)
    video.bool("variable_frame_rate", facts.variableFrameRate)
    video.string("hdr", facts.hdr)
    video.int("rotation", facts.rotation)
    video.bool("mirrored", facts.mirrored)
    video.string("codec", facts.codec)
    video.bool("audio", facts.audio)
    video.bool("tone_mapped", facts.toneMapped)
    video.number("poster_time", facts.posterTime)
    var tokens = ObjectWriter()
    for (profile, estimate) in VideoTokens.estimate(facts, frames: frames.map { ($0.1.width, $0.1.height) }) {
      tokens.int(profile.rawValue, estimate)
    }
    video.raw("estimated_tokens", tokens.close())
    video.raw("mp4", mp4(view))
    object.raw("video", video.close())
    var list: [UInt8] = [UInt8(ascii: "[")]
    for (number, (time, frame)) in frames.enumerated() {
      if number > 0 { list.append(UInt8(ascii: ",")) }
      var entry = ObjectWriter()
      entry.string("url", view.link(view.framePath(number + 1)))
      if let signed = view.signedPath {
        entry.string("signed_url", view.link(signed + "&frame=\(number + 1)"))
      }
      entry.number("time", time)
      entry.int("width", frame.width)
      entry.int("height", frame.height)
      entry.int("bytes", frame.bytes)
      entry.string("sha256", frame.blob.hex)
      // Each provider's image of the frame: its size and tokens by that provider's rule, and the
      // link that serves it (the stored frame itself when the rule keeps its size).
      var profiles = ObjectWriter()
      for profile in VideoFacts.frameProfiles {
        let size = profile.size(ofStored: frame.width, frame.height)
        var one = ObjectWriter()
        one.int("width", size.width)
        one.int("height", size.height)
        one.optionalInt("estimated_tokens", profile.estimatedTokens(width: size.width, height: size.height))
        one.string("url", view.link(view.framePath(number + 1, profile: profile)))
        profiles.raw(profile.rawValue, one.close())
      }
      entry.raw("profiles", profiles.close())
      list.append(contentsOf: entry.close())
    }
    list.append(UInt8(ascii: "]"))
    object.raw("frames", list)
  }

  /// A video's MP4: its state (`processing` until a worker made it, `ready`, or `failed` with a
  /// code), the link that serves it (`?profile=gemini`), and once ready its size and hash.
  private static func mp4(_ view: RecordView) -> [UInt8] {
    var mp4 = ObjectWriter()
    let stored = view.renditions[VideoFacts.mp4Name]
    let state: String
    switch view.videoJob?.state {
    case .ready? where stored != nil: state = "ready"
    case .failed?: state = "failed"
    default: state = "processing"
    }
    mp4.string("state", state)
    mp4.optional("code", state == "failed" ? view.videoJob?.code ?? "rendition_failed" : nil)
    mp4.string("url", view.link(view.path(.gemini, explicit: true)))
    mp4.optionalInt("width", state == "ready" ? stored?.width : nil)
    mp4.optionalInt("height", state == "ready" ? stored?.height : nil)
    mp4.optionalInt("bytes", state == "ready" ? stored?.bytes : nil)
    mp4.optional("sha256", state == "ready" ? stored?.blob.hex : nil)
    return mp4.close()
  }

  /// One record as a whole response body (with a final newline).
  static func record(_ view: RecordView) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(1536)
    record(view, into: &out)
    out.append(0x0A)
    return out
  }

  /// The error object of a failed multipart part: the problem shape plus the part's position.
  static func partError(_ entry: PublicError, part: Int, into out: inout [UInt8]) {
    var object = ObjectWriter()
    object.string("type", "about:blank")
    object.int("status", entry.status)
    object.string("code", entry.code)
    object.string("title", entry.title)
    object.int("part", part)
    out.append(contentsOf: object.close())
  }

  /// RFC 3339 UTC, whole seconds (records store whole seconds).
  static func timestamp(_ seconds: Double) -> String {
    let text = JSONText.timestamp(seconds: Int(seconds.rounded(.down)), milliseconds: 0)
    return String(text.dropLast(5)) + "Z"
  }

  /// Members of one JSON object, appended in order; `bytes` once closed.
  struct ObjectWriter {
    private(set) var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var needsComma = false

    init() {}

    mutating func key(_ name: String) {
      if needsComma { bytes.append(UInt8(ascii: ",")) }
      needsComma = true
      JSONText.appendQuoted(name, to: &bytes)
      bytes.append(UInt8(ascii: ":"))
    }

    mutating func string(_ name: String, _ value: String) {
      key(name)
      JSONText.appendQuoted(value, to: &bytes)
    }

    mutating func int(_ name: String, _ value: Int) {
      key(name)
      bytes.append(contentsOf: String(value).utf8)
    }

    mutating func optional(_ name: String, _ value: String?) {
      if let value {
        string(name, value)
      } else {
        key(name)
        bytes.append(contentsOf: "null".utf8)
      }
    }

    mutating func bool(_ name: String, _ value: Bool) {
      key(name)
      bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A finite number as JSON writes it (whole numbers without a fraction).
    mutating func number(_ name: String, _ value: Double) {
      key(name)
      let finite = value.isFinite ? value : 0
      let text = finite == finite.rounded() && abs(finite) < 1e15 ? String(Int(finite)) : String(finite)
      bytes.append(contentsOf: text.utf8)
    }

    mutating func optionalNumber(_ name: String, _ value: Double?) {
      if let value {
        number(name, value)
      } else {
        key(name)
        bytes.append(contentsOf: "null".utf8)
      }
    }

    mutating func optionalInt(_ name: String, _ value: Int?) {
      key(name)
      bytes.append(contentsOf: (value.map(String.init) ?? "null").utf8)
    }

    mutating func raw(_ name: String, _ value: [UInt8]) {
      key(name)
      bytes.append(contentsOf: value)
    }

    mutating func close() -> [UInt8] {
      bytes.append(UInt8(ascii: "}"))
      return bytes
    }
  }
}
