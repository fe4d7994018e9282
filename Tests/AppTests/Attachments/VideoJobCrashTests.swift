import Foundation
import TestSupport
import Testing

@testable import App

/// A node killed while it encodes a video's MP4: the job is not lost. The built binary on the
/// embedded backend (SQLite + files), killed with SIGKILL mid-encode and started again on the
/// same data directory, requeues the job it was running and finishes it; the record ends
/// `ready`, never stuck in `processing`.
@Suite(.serialized, .timeLimit(.minutes(6))) struct VideoJobCrashTests {
  static let binary = BuiltExecutable.attachd
  static let key = "acme:0123456789abcdef0123"

  /// A 60 s 1280 × 720 H.264 clip from ffmpeg's test source: long enough that its MP4 takes
  /// seconds to encode, so a kill lands mid-encode.
  static func longClip(in directory: String) throws -> String {
    let path = directory + "/long.mp4"
    _ = try ChildProcess.run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-t", "60", "-c:v", "libx264",
        "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p", path,
      ], timeout: 120)
    return path
  }

  /// curl's answer: the status, and the body as JSON when it is.
  static func curl(_ arguments: [String], timeout: TimeInterval = 30) throws -> (
    status: Int, json: [String: Any]?
  ) {
    let body = try LiveTesting.temporaryDirectory() + "/body"
    let run = try ChildProcess.run(
      "/usr/bin/curl", ["-s", "-o", body, "-w", "%{http_code}"] + arguments, timeout: timeout, checked: false)
    let data = (try? Data(contentsOf: URL(fileURLWithPath: body))) ?? Data()
    return (
      Int(run.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0,
      try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    )
  }

  func serve(port: Int, dataDir: String, log: String) throws -> pid_t {
    let binary = try #require(Self.binary)
    let pid = try ChildProcess.start(
      "/usr/bin/env",
      [
        "ATTACHD_API_KEYS=\(Self.key)", "ATTACHD_ACCESS_LOG=off", binary, "serve", "--port", String(port),
        "--data-dir", dataDir,
      ], output: log)
    let up = LiveTesting.waitUntil(seconds: 30) {
      (try? Self.curl(["http://127.0.0.1:\(port)/readyz"]).status) == 200
    }
    #expect(up, "attachd did not become ready")
    return pid
  }

  @Test(.enabled(if: binary != nil, "attachd binary not built"))
  func aNodeKilledMidEncodeFinishesTheJobAfterItsRestart() throws {
    let directory = try LiveTesting.temporaryDirectory()
    let clip = try Self.longClip(in: directory)
    let dataDir = directory + "/data"
    let port = try ChildProcess.freePort()
    let auth = "Authorization: Bearer 0123456789abcdef0123"
    let first = try serve(port: port, dataDir: dataDir, log: directory + "/first.log")
    let upload = try Self.curl(
      ["-H", auth, "--data-binary", "@" + clip, "http://127.0.0.1:\(port)/v1/attachments"], timeout: 120)
    #expect(upload.status == 201, "\(upload.status) \(upload.json ?? [:])")
    let id = try #require(upload.json?["id"] as? String)
    // The worker claims the job as the upload answers; an encode of a minute of 720p takes
    // longer than this.
    usleep(1_500_000)
    kill(first, SIGKILL)
    ChildProcess.stop(first)
    let second = try serve(port: port, dataDir: dataDir, log: directory + "/second.log")
    defer { ChildProcess.stop(second) }
    let log = try String(contentsOfFile: directory + "/second.log", encoding: .utf8)
    #expect(log.contains("video jobs requeued"), "the restarted node found no job it had been running")
    let deadline = Date().addingTimeInterval(240)
    var state = "processing"
    while state == "processing" && Date() < deadline {
      let meta = try Self.curl(["-H", auth, "http://127.0.0.1:\(port)/v1/attachments/\(id)/meta"])
      state = ((meta.json?["video"] as? [String: Any])?["mp4"] as? [String: Any])?["state"] as? String ?? "?"
      if state == "processing" { usleep(500_000) }
    }
    #expect(state == "ready")
    let fetched = try ChildProcess.run(
      "/usr/bin/curl",
      [
        "-s", "-f", "-H", auth, "-o", directory + "/out.mp4",
        "http://127.0.0.1:\(port)/v1/attachments/\(id)?profile=gemini",
      ])
    #expect(fetched.status == 0)
    let decode = try ChildProcess.run(
      "/usr/bin/ffmpeg", ["-v", "error", "-i", directory + "/out.mp4", "-f", "null", "-"])
    #expect(decode.output.isEmpty, "\(decode.output)")
  }
}
