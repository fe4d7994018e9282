import Foundation
import ImagePipeline
import TestSupport
import Testing

@testable import App

/// A video's frames for each provider that takes images: every frame lists, per provider, the
/// size and tokens by that provider's image rule and a link (`?frame=N&profile=…`) that serves
/// exactly that image — the stored frame where the rule keeps its size, else a rendition made
/// on the first read and kept.
@Suite(
  .serialized, .timeLimit(.minutes(3)),
  .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "skipped: no ffmpeg"))
struct VideoFrameProfileTests {
  static let key = AttachmentServer.auth(AttachmentServer.acmeKey)

  /// A one-second 1080p H.264 clip, made with ffmpeg.
  static func fullHD() throws -> [UInt8] {
    let path = try LiveTesting.temporaryDirectory() + "/1080p.mp4"
    let (status, _) = try LiveTesting.run(
      "/usr/bin/ffmpeg",
      [
        "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=1920x1080:r=30:d=1",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", path,
      ], timeout: 60)
    #expect(status == 0)
    return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  /// Each frame's `profiles` entry for `name`.
  static func profile(_ frame: [String: Any], _ name: String) -> [String: Any] {
    (frame["profiles"] as? [String: Any])?[name] as? [String: Any] ?? [:]
  }

  @Test func framesLargerThanARuleAreServedSizedByEachProvidersRule() throws {
    let server = try AttachmentServer { $0.attachments.videoFrameEdge = 1920 }
    defer { server.stop() }
    let client = server.client
    let reply = try client.execute(
      "POST", "/v1/attachments", headers: Self.key, body: .bytes(try Self.fullHD()))
    #expect(reply.status == 201, "\(reply.status) \(reply.text)")
    let id = try #require(reply.json?["id"] as? String)
    let frames = try #require(reply.json?["frames"] as? [[String: Any]])
    #expect(frames.count >= 4)
    let first = try #require(frames.first)
    #expect(first["width"] as? Int == 1920 && first["height"] as? Int == 1080)
    // Anthropic: at most 1568 on the long edge and ~1.15 MP; OpenAI: 768 on the short side;
    // Gemini: within its 1536 box.
    let expected: [(String, Int, Int)] = [
      ("anthropic", 1429, 804), ("openai", 1365, 768), ("gemini", 1536, 864),
    ]
    var served: [String: [UInt8]] = [:]
    for (name, width, height) in expected {
      let entry = Self.profile(first, name)
      #expect(entry["width"] as? Int == width && entry["height"] as? Int == height, "\(name): \(entry)")
      #expect(entry["estimated_tokens"] as? Int ?? 0 > 0, "\(name): \(entry)")
      let url = try #require(entry["url"] as? String)
      #expect(url == "/v1/attachments/\(id)?frame=1&profile=\(name)")
      let got = try client.execute("GET", url, headers: Self.key)
      #expect(got.status == 200 && got["content-type"] == "image/jpeg", "\(name): \(got.status)")
      let size = try #require(ProfileUploadTests.jpegSize(got.body))
      #expect(size == (width, height), "\(name): \(size)")
      try JPEGOutputVerifier.verify(got.body)
      served[name] = got.body
    }
    // Each is a rendition, not the stored frame, made once: asked again, the same bytes come back.
    let plain = try client.execute("GET", "/v1/attachments/\(id)?frame=1", headers: Self.key)
    let distinct = served.values.allSatisfy { $0 != plain.body }
    #expect(distinct, "a provider's frame is the stored 1920 × 1080 frame")
    let again = try client.execute("GET", "/v1/attachments/\(id)?frame=1&profile=openai", headers: Self.key)
    let same = again.body == served["openai"]
    #expect(same, "made again with other bytes")
    // A frame past the last is missing for every profile.
    let missing = try client.execute(
      "GET", "/v1/attachments/\(id)?frame=\(frames.count + 1)&profile=openai", headers: Self.key)
    #expect(missing.status == 404)
  }

  @Test func atTheDefaultFrameEdgeEveryProvidersFrameIsTheStoredFrame() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let client = server.client
    let reply = try client.execute(
      "POST", "/v1/attachments", headers: Self.key, body: .bytes(try Self.fullHD()))
    #expect(reply.status == 201)
    let frames = try #require(reply.json?["frames"] as? [[String: Any]])
    let first = try #require(frames.first)
    #expect(first["width"] as? Int == 1280 && first["height"] as? Int == 720)
    let stored = try client.execute("GET", try #require(first["url"] as? String), headers: Self.key)
    for name in ["anthropic", "openai", "gemini"] {
      let entry = Self.profile(first, name)
      #expect(entry["width"] as? Int == 1280 && entry["height"] as? Int == 720, "\(name): \(entry)")
      let got = try client.execute("GET", try #require(entry["url"] as? String), headers: Self.key)
      let same = got.body == stored.body
      #expect(got.status == 200 && same, "\(name)")
    }
  }
}
