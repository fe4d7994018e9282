import AttachdTesting
import Crypto
import Foundation
import HTTP
import ImagePipeline
import MovieContainers
import Storage
import TestSupport
import Testing

@testable import App

/// Videos through `POST /v1/attachments` (raw and multipart), the IETF resumable draft and tus:
/// a poster and frames made in the sandbox, stored, listed in the record and served, with
/// nothing private in any of them; bad videos refused with their codes and nothing stored.
@Suite(.serialized, .timeLimit(.minutes(3))) struct VideoUploadTests {
  static let key = AttachmentServer.auth(AttachmentServer.acmeKey)

  /// A record and every output it names: the poster, then each frame.
  struct Uploaded {
    var record: [String: Any]
    var video: [String: Any]
    var outputs: [[UInt8]]
  }

  /// Posts `bytes` raw, expects a 201 video record, and fetches every output it names.
  static func upload(_ server: AttachmentServer, _ bytes: [UInt8]) throws -> Uploaded {
    let reply = try server.client.execute("POST", "/v1/attachments", headers: key, body: .bytes(bytes))
    #expect(reply.status == 201, "\(reply.status) \(reply.code ?? "")")
    return try outputs(server, try #require(reply.json))
  }

  /// Fetches the poster and every frame a record names, each checked against its `sha256`.
  static func outputs(_ server: AttachmentServer, _ record: [String: Any]) throws -> Uploaded {
    #expect(["video", "live_photo"].contains(record["kind"] as? String))
    let video = try #require(record["video"] as? [String: Any])
    let frames = try #require(record["frames"] as? [[String: Any]])
    var outputs: [[UInt8]] = []
    for item in [record] + frames {
      let url = try #require(item["url"] as? String)
      let got = try server.client.execute("GET", url, headers: key)
      #expect(got.status == 200, "\(url): \(got.status)")
      #expect(got["content-type"] == "image/jpeg")
      #expect(Hex.encode(SHA256.hash(got.body)) == item["sha256"] as? String, "\(url)")
      #expect(got.body.count == item["bytes"] as? Int)
      let size = ProfileUploadTests.jpegSize(got.body)
      #expect(
        size.map { [$0.0, $0.1] } == [item["width"] as? Int ?? 0, item["height"] as? Int ?? 0], "\(url)")
      outputs.append(got.body)
    }
    return Uploaded(record: record, video: video, outputs: outputs)
  }

  @Test func aVideoBecomesAnUprightPosterAndFramesListedInItsRecord() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    // Display sizes by the fixtures' README: a quarter turn swaps the edges, a mirror does not.
    let cases: [(String, portrait: Bool, rotation: Int, mirrored: Bool, codec: String)] = [
      ("h264-aac.mp4", false, 0, false, "h264"), ("hevc-aac.mov", false, 0, false, "hevc"),
      ("hevc-rot90.mov", true, 90, false, "hevc"), ("hevc-rot180.mov", false, 180, false, "hevc"),
      ("hevc-rot270.mov", true, 270, false, "hevc"), ("hevc-mirror.mov", false, 0, true, "hevc"),
      ("hevc-rot90-mirror.mov", true, 90, true, "hevc"),
      // A browser's recording: WebM, one with a duration, one piped live without (sizes unknown).
      ("vp9-opus.webm", false, 0, false, "vp9"), ("vp8-live-tags.webm", false, 0, false, "vp8"),
    ]
    for (name, portrait, rotation, mirrored, codec) in cases {
      let uploaded = try Self.upload(server, try VideoFixtures.bytes(name))
      let video = uploaded.video
      #expect(video["rotation"] as? Int == rotation, "\(name)")
      #expect(video["mirrored"] as? Bool == mirrored, "\(name)")
      #expect(video["codec"] as? String == codec, "\(name)")
      let format = (uploaded.record["source"] as? [String: Any])?["format"] as? String
      #expect(format == String(name.split(separator: ".").last ?? ""), "\(name)")
      let (width, height) = (video["width"] as? Int ?? 0, video["height"] as? Int ?? 0)
      let expected: [Int] = portrait ? [108, 192] : [192, 108]
      #expect([width, height] == expected, "\(name)")
      // Every still upright: the same orientation as the video's display size.
      for output in uploaded.outputs {
        let size = try #require(ProfileUploadTests.jpegSize(output))
        #expect((size.1 > size.0) == portrait, "\(name)")
      }
      // 3 s at one a second, at least 4.
      #expect((uploaded.record["frames"] as? [Any])?.count == 4, "\(name)")
      #expect(uploaded.record["content_type"] as? String == "image/jpeg")
    }
  }

  @Test func theRecordSaysWhatTheVideoIsAndWhatEachProviderWouldBeCharged() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let plain = try Self.upload(server, try VideoFixtures.bytes("h264-aac.mp4")).video
    #expect(plain["duration"] as? Double == 3 || plain["duration"] as? Int == 3)
    #expect(plain["audio"] as? Bool == true && plain["hdr"] as? String == "none")
    #expect(plain["tone_mapped"] as? Bool == false && plain["variable_frame_rate"] as? Bool == false)
    #expect(plain["frame_rate"] as? Int == 10)
    let tokens = try #require(plain["estimated_tokens"] as? [String: Int])
    // Gemini: 258 a second for ⌈3⌉ seconds + 32 a second of audio.
    #expect(tokens["gemini"] == 3 * 258 + 3 * 32)
    // Anthropic: four 192 × 108 frames at ⌈w·h / 750⌉ each.
    #expect(tokens["anthropic"] == 4 * ((192 * 108 + 749) / 750))
    #expect(tokens["openai"] == 4 * (85 + 170))
    let silent = try Self.upload(server, try VideoFixtures.bytes("h264-no-audio.mp4")).video
    #expect(silent["audio"] as? Bool == false)
    // An iPhone 16's spatial audio (apac) alone is no audio, not a failure.
    #expect(
      try Self.upload(server, try VideoFixtures.bytes("only-audio-apac.mov")).video["audio"] as? Bool == false
    )
    let hlg = try Self.upload(server, try VideoFixtures.bytes("hevc-hlg-10bit.mov")).video
    #expect(hlg["hdr"] as? String == "hlg" && hlg["tone_mapped"] as? Bool == true)
    let vision = try Self.upload(server, try VideoFixtures.bytes("hevc-dolby-vision-84.mov")).video
    #expect(vision["hdr"] as? String == "dolby_vision_hlg" && vision["tone_mapped"] as? Bool == true)
    #expect(
      try Self.upload(server, try VideoFixtures.bytes("h264-vfr.mp4")).video["variable_frame_rate"] as? Bool
        == true)
    // The record is the same from /meta, and the attachment goes with its frames.
    let uploaded = try Self.upload(server, try VideoFixtures.bytes("timecode.mov"))
    let id = try #require(uploaded.record["id"] as? String)
    let meta = try server.client.execute("GET", "/v1/attachments/\(id)/meta", headers: Self.key)
    #expect(meta.status == 200)
    #expect(
      (meta.json?["frames"] as? [[String: Any]])?.map { $0["sha256"] as? String }
        == (uploaded.record["frames"] as? [[String: Any]])?.map { $0["sha256"] as? String })
    #expect(
      try server.client.execute("GET", "/v1/attachments/\(id)?frame=9", headers: Self.key).status == 404)
    #expect(
      try server.client.execute("GET", "/v1/attachments/\(id)?frame=x", headers: Self.key).code
        == "invalid_frame")
    #expect(try server.client.execute("DELETE", "/v1/attachments/\(id)", headers: Self.key).status == 204)
    #expect(
      try server.client.execute("GET", "/v1/attachments/\(id)?frame=1", headers: Self.key).status == 404)
  }

  @Test func nothingPlantedInAnyCarrierReachesAnOutput() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    for name in ["iphone-metadata.mov", "android-metadata.mp4", "live-photo.mov", "vp8-live-tags.webm"] {
      let uploaded = try Self.upload(server, try VideoFixtures.bytes(name))
      let record = try JSONSerialization.data(withJSONObject: uploaded.record)
      for output in uploaded.outputs + [[UInt8](record)] {
        for planted in VideoFixtures.planted {
          #expect(!output.contains(subsequence: Array(planted.utf8)), "\(name): \(planted)")
        }
        // Every still is a clean JPEG: no APP segment but JFIF, nothing after the image.
        if output.starts(with: [0xFF, 0xD8]) {
          #expect(throws: Never.self, "\(name)") { try JPEGOutputVerifier.verify(output) }
        }
      }
    }
  }

  @Test(arguments: [
    ("audio-only.m4a", 415, "video_no_video_track"), ("truncated-half.mp4", 422, "truncated"),
    ("truncated-no-moov.mov", 422, "truncated"),
    ("fragmented-no-duration.mp4", 422, "video_duration_unknown"),
    ("external-dref.mov", 422, "video_external_reference"), ("lie-8k.mp4", 413, "video_frame_too_large"),
    ("lie-long.mp4", 413, "video_too_long"),
  ])
  func aBadVideoIsRefusedWithItsCodeAndNothingIsStored(name: String, status: Int, code: String) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let reply = try server.client.execute(
      "POST", "/v1/attachments", headers: Self.key, body: .bytes(try VideoFixtures.bytes(name)))
    #expect(reply.status == status && reply.code == code, "\(name): \(reply.status) \(reply.code ?? "")")
    #expect(try server.app.attachments.store.statistics().attachments == 0)
  }

  @Test func eachKindIsHeldToItsOwnLimit() throws {
    let video = try VideoFixtures.bytes("h264-aac.mp4")
    let image = TusServer.png(side: 64)
    let server = try AttachmentServer { config in
      config.attachments.maxVideoBytes = video.count - 1
      config.attachments.maxUploadBytes = image.count - 1
    }
    defer { server.stop() }
    let tooLong = try server.client.execute("POST", "/v1/attachments", headers: Self.key, body: .bytes(video))
    #expect(tooLong.status == 413 && tooLong.code == "video_too_large_bytes")
    let tooLarge = try server.client.execute(
      "POST", "/v1/attachments", headers: Self.key, body: .bytes(image))
    #expect(tooLarge.status == 413)
    // A video may be larger than an image's limit, when the video limit allows it.
    let roomy = try AttachmentServer { config in config.attachments.maxUploadBytes = 1000 }
    defer { roomy.stop() }
    #expect(
      try roomy.client.execute("POST", "/v1/attachments", headers: Self.key, body: .bytes(video)).status
        == 201)
  }

  @Test func aVideoInAMultipartUploadBesideAPhotoIsOneAttachmentEach() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    var form = MultipartForm()
    form.addFile(
      "file", filename: "clip.mov", try VideoFixtures.bytes("hevc-aac.mov"), contentType: "video/quicktime")
    form.addFile("file", filename: "photo.png", TusServer.png(), contentType: "image/png")
    let reply = try server.client.execute(
      "POST", "/v1/attachments", headers: Self.key + ["Content-Type": form.contentType],
      body: .bytes(form.body))
    #expect(reply.status == 201, "\(reply.status) \(reply.code ?? "")")
    let items = try #require(reply.jsonArray)
    #expect(items.map { $0["kind"] as? String } == ["video", "image"])
    _ = try Self.outputs(server, items[0])
  }

  @Test func aLivePhotosStillAndMovieBecomeOneAttachmentAndOthersStayApart() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    func post(_ files: [(String, String)]) throws -> [[String: Any]] {
      var form = MultipartForm()
      for (name, type) in files {
        form.addFile("file", filename: name, try VideoFixtures.bytes(name), contentType: type)
      }
      let reply = try server.client.execute(
        "POST", "/v1/attachments", headers: Self.key + ["Content-Type": form.contentType],
        body: .bytes(form.body))
      #expect(reply.status == 201, "\(reply.status) \(reply.code ?? "")")
      return try #require(reply.jsonArray)
    }
    // The pair, in either order: one attachment, the still as its image.
    for files in [
      [("live-photo.jpg", "image/jpeg"), ("live-photo.mov", "video/quicktime")],
      [("live-photo.mov", "video/quicktime"), ("live-photo.jpg", "image/jpeg")],
    ] {
      let items = try post(files)
      #expect(items.count == 1)
      let record = try #require(items.first)
      #expect(record["kind"] as? String == "live_photo")
      #expect((record["source"] as? [String: Any])?["format"] as? String == "jpeg")
      let uploaded = try Self.outputs(server, record)
      #expect(uploaded.outputs.count == 5)
      let text = try JSONSerialization.data(withJSONObject: record)
      for output in uploaded.outputs + [[UInt8](text)] {
        for planted in VideoFixtures.planted {
          #expect(!output.contains(subsequence: Array(planted.utf8)), "\(planted)")
        }
      }
      let id = try #require(record["id"] as? String)
      let mp4 = try VideoRenditionTests.waitForMP4(server.client, id)
      #expect(((mp4["video"] as? [String: Any])?["mp4"] as? [String: Any])?["state"] as? String == "ready")
    }
    // Identifiers that do not match: two attachments, a photo and a video.
    let apart = try post([("live-photo.jpg", "image/jpeg"), ("live-photo-other.mov", "video/quicktime")])
    #expect(apart.map { $0["kind"] as? String } == ["image", "video"])
  }

  @Test func aVideoSentResumablyOrOverTusEndsInThePlainUploadsRecord() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let bytes = try VideoFixtures.bytes("hevc-rot90.mov")
    let plain = try Self.upload(tus.server, bytes)
    func same(_ record: [String: Any]) throws {
      let other = try Self.outputs(tus.server, record)
      #expect(other.outputs == plain.outputs)
      // The same facts; the MP4's state depends on when each worker got to it.
      var (theirs, ours) = (other.video, plain.video)
      (theirs["mp4"], ours["mp4"]) = (nil, nil)
      #expect(NSDictionary(dictionary: theirs) == NSDictionary(dictionary: ours))
    }
    // IETF draft, interop 8, cut after 40 % and resumed.
    let client = ResumableClient(version: 8, key: AttachmentServer.acmeKey, port: tus.port)
    let resumed = try client.interruptedUpload(
      bytes, cut: bytes.count * 2 / 5, contentType: "video/quicktime")
    #expect(resumed.final.status == 201)
    try same(try #require(resumed.final.json))
    // tus 1.0, in two PATCHes.
    let path = try tus.create(length: bytes.count)
    let half = bytes.count / 2
    #expect(try tus.patch(path, offset: 0, Array(bytes[..<half])).status == 204)
    let last = try tus.patch(path, offset: half, Array(bytes[half...]))
    #expect(last.status == 204)
    let done = try tus.request("GET", path, [TusServer.tus, TusServer.acme])
    #expect(done.status == 200)
    try same(try #require(done.json))
  }
}

/// The MP4 rendition: a durable job any node's worker runs after the upload's 201, its output
/// re-parsed before it is stored, the kept source dropped once it is made.
@Suite(.serialized, .timeLimit(.minutes(5))) struct VideoRenditionTests {
  static let key = AttachmentServer.auth(AttachmentServer.acmeKey)

  /// Polls `/meta` until the MP4's state is no longer `processing`; the last record.
  static func waitForMP4(
    _ client: TestClient, _ id: String, headers: HTTPHeaders = key, seconds: Double = 120
  )
    throws -> [String: Any]
  {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
      let meta = try client.execute("GET", "/v1/attachments/\(id)/meta", headers: headers)
      let record = try #require(meta.json)
      let mp4 = (record["video"] as? [String: Any])?["mp4"] as? [String: Any]
      if mp4?["state"] as? String != "processing" || Date() > deadline { return record }
      usleep(200_000)
    }
  }

  /// An Android MP4 (planted tags, x264's SEI) and a browser's live WebM recording (VP8 + Opus,
  /// planted Tags, no sizes): the same clean H.264 MP4.
  @Test(arguments: ["android-metadata.mp4", "vp8-live-tags.webm"])
  func theMP4IsMadeAfterTheAnswerCleanAndServedForGemini(name: String) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let source = try VideoFixtures.bytes(name)
    let reply = try server.client.execute("POST", "/v1/attachments", headers: Self.key, body: .bytes(source))
    #expect(reply.status == 201)
    let id = try #require(reply.json?["id"] as? String)
    let record = try Self.waitForMP4(server.client, id)
    let mp4 = try #require((record["video"] as? [String: Any])?["mp4"] as? [String: Any])
    #expect(mp4["state"] as? String == "ready", "\(mp4)")
    #expect(mp4["url"] as? String == "/v1/attachments/\(id)?profile=gemini")
    let got = try server.client.execute("GET", "/v1/attachments/\(id)?profile=gemini", headers: Self.key)
    #expect(got.status == 200 && got["content-type"] == "video/mp4")
    #expect(Hex.encode(SHA256.hash(got.body)) == mp4["sha256"] as? String)
    // Our own reader passes it (no box outside the allow-list, no SEI, zero times) …
    #expect(throws: Never.self) { try MovieOutputCheck.verify(got.body) }
    // … no planted string survived (x264's SEI in the source included) …
    for planted in VideoFixtures.planted + ["x264", "Lavf"] {
      #expect(!got.body.contains(subsequence: Array(planted.utf8)), "\(planted)")
    }
    // … ffmpeg decodes every frame without an error, and ffprobe finds no tag.
    let path = server.directory + "/rendition.mp4"
    try Data(got.body).write(to: URL(fileURLWithPath: path))
    let decode = try ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-f", "null", "-"])
    #expect(decode.status == 0 && decode.output.isEmpty, "\(decode.output)")
    let probe = try ChildProcess.run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format_tags:stream_tags", "-of", "compact", path])
    #expect(!probe.output.contains("TAG:"), "\(probe.output)")
    // The kept source is gone once the MP4 exists.
    let store = server.app.attachments.store
    let stored = try #require(try store.get(tenant: "acme", id: id))
    #expect(try store.renditions(of: stored)[VideoFacts.sourceName] == nil)
    #expect(try store.index.referenceCount(of: BlobHash.of(source)) == 0)
  }

  /// Spooled to disk (the server's way with a large upload), a video is handed to the sandbox
  /// and kept for its MP4 by kernel copies from the spool file — raw, and as a multipart part
  /// (a range of the spooled body) — and the MP4 made from that copy is ready.
  @Test func aSpooledVideoRawOrAsAPartIsCopiedByTheKernelAndMadeIntoItsMP4() throws {
    let server = try AttachmentServer { $0.uploads.spoolThreshold = 0 }
    defer { server.stop() }
    let movie = try VideoFixtures.bytes("hevc-aac.mov")
    var form = MultipartForm()
    form.addFile("file", filename: "photo.png", TusServer.png(), contentType: "image/png")
    form.addFile("file", filename: "clip.mov", movie, contentType: "video/quicktime")
    let raw = try server.client.execute("POST", "/v1/attachments", headers: Self.key, body: .bytes(movie))
    let parts = try server.client.execute(
      "POST", "/v1/attachments", headers: Self.key + ["Content-Type": form.contentType],
      body: .bytes(form.body))
    #expect(raw.status == 201 && parts.status == 201, "\(raw.status) \(parts.status)")
    let records = [try #require(raw.json), try #require(parts.jsonArray?.last)]
    for record in records {
      let id = try #require(record["id"] as? String)
      #expect(record["kind"] as? String == "video")
      _ = try VideoUploadTests.outputs(server, record)
      let done = try Self.waitForMP4(server.client, id)
      let mp4 = (done["video"] as? [String: Any])?["mp4"] as? [String: Any]
      #expect(mp4?["state"] as? String == "ready", "\(mp4 ?? [:])")
    }
  }

  @Test func aPhotosGeminiProfileIsStillItsImage() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    // A photo: `?profile=gemini` is its image as before.
    let photo = try server.client.execute(
      "POST", "/v1/attachments", headers: Self.key, body: .bytes(TusServer.png()))
    let photoID = try #require(photo.json?["id"] as? String)
    let image = try server.client.execute(
      "GET", "/v1/attachments/\(photoID)?profile=gemini", headers: Self.key)
    #expect(image.status == 200 && image["content-type"] == "image/jpeg")
    #expect(photo.json?["video"] == nil && photo.json?["kind"] as? String == "image")
  }
}

extension Array where Element == UInt8 {
  /// Whether `needle` occurs anywhere in these bytes.
  func contains(subsequence needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= count else { return false }
    return (0...(count - needle.count)).contains { start in
      self[start] == needle[0] && Array(self[start..<(start + needle.count)]) == needle
    }
  }
}
