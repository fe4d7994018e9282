import Foundation
import Synchronization
import TestSupport
import Testing

@testable import App

/// Whether tuspy can be imported here.
enum Tuspy {
  static let installed: Bool = {
    (try? LiveTesting.run("/usr/bin/env", ["python3", "-c", "import tusclient"], timeout: 30).0) == 0
  }()
}

/// tuspy, the tus project's own Python client, against the live server through a loopback proxy
/// that cuts or corrupts a PATCH (`Tests/Fixtures/tus/tuspy_driver.py`).
@Suite(
  .serialized, .timeLimit(.minutes(3)),
  .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
  .enabled(if: Tuspy.installed, "skipped: tuspy not installed (Scripts/install-deps)"))
struct TuspyTests {
  static let driver = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
      "Fixtures/tus/tuspy_driver.py"
    )
    .path

  /// What the driver reports.
  struct Report: Decodable {
    var url: String
    var patch_offsets: [Int]
    var cuts: Int
    var corrupted: Int
    var first_failure: Int?
    var status: Int
    var content_location: String?
    var head_offset: String?
    var head_metadata: String?
  }

  /// Runs the driver against `port` with `settings` (target, key and file filled in).
  static func drive(port: Int, file: String, _ settings: [String: Any]) throws -> (Report, [String: Any]) {
    var config = settings
    config["target"] = "127.0.0.1:\(port)"
    config["key"] = config["key"] ?? AttachmentServer.acmeKey
    config["file"] = file
    let json = String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
    let (status, output) = try LiveTesting.run("/usr/bin/env", ["python3", driver, json], timeout: 120)
    #expect(status == 0, "tuspy driver failed")
    let report = try JSONDecoder().decode(Report.self, from: output)
    let object = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
    return (report, try #require(object["record"] as? [String: Any]))
  }

  static let heic = "heic-iphonexs-irot-exif6-gps.heic"
  static let jpeg = "jpeg-iphone6-gps.jpg"

  @Test func tuspyUploadsInChunksAndTheRecordEqualsAPlainUploads() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let file = UploadClientTests.corpusPath(Self.heic)
    let chunk = 256 << 10
    let (report, record) = try Self.drive(port: tus.port, file: file, ["mode": "plain", "chunk_size": chunk])
    let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
    #expect(report.patch_offsets == Array(stride(from: 0, to: size, by: chunk)))
    #expect(report.status == 200 && report.content_location?.hasPrefix("/v1/attachments/att_") == true)
    #expect(report.head_offset == String(size))
    #expect(report.head_metadata == "filename cGhvdG8uanBn")
    let plain = try tus.plainRecord(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
    #expect(TusServer.content(record) == TusServer.content(plain))
  }

  @Test func tuspyResumesAfterItsConnectionIsCutMidPatch() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let file = UploadClientTests.corpusPath(Self.heic)
    let chunk = 256 << 10
    let (report, record) = try Self.drive(
      port: tus.port, file: file, ["mode": "cut", "at": 100_000, "chunk_size": chunk])
    #expect(report.cuts == 1)
    // The cut PATCH kept every byte that reached the server: tuspy resumed from there, in the
    // middle of its chunk, not from the chunk's start.
    #expect(Array(report.patch_offsets.prefix(2)) == [0, 100_000])
    #expect(report.status == 200)
    let plain = try tus.plainRecord(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
    #expect(TusServer.content(record) == TusServer.content(plain))
  }

  @Test func tuspyGets460ForACorruptedChunkAndItsRetryIsStored() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let file = UploadClientTests.corpusPath(Self.jpeg)
    let chunk = 512 << 10
    let (report, record) = try Self.drive(
      port: tus.port, file: file, ["mode": "corrupt", "at": 300_000, "chunk_size": chunk, "checksum": true])
    #expect(report.corrupted == 1)
    #expect(report.first_failure == 460)
    // The corrupted chunk was discarded whole: the retry starts where it had started.
    #expect(Array(report.patch_offsets.prefix(2)) == [0, 0])
    #expect(report.status == 200)
    let plain = try tus.plainRecord(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
    #expect(TusServer.content(record) == TusServer.content(plain))
  }
}

/// The same interrupted tuspy upload with HAProxy on loopback in front of attachd, as in
/// production: tuspy → cutting proxy → HAProxy (keep-alive, streamed bodies) → attachd.
@Suite(
  .serialized, .timeLimit(.minutes(3)),
  .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
  .enabled(if: Tuspy.installed, "skipped: tuspy not installed (Scripts/install-deps)"),
  .enabled(if: HAProxy.executable != nil, "skipped: haproxy not installed (Scripts/install-deps)"))
struct TuspyHAProxyTests {
  @Test func tuspyResumesThroughHAProxyAfterItsConnectionIsCutMidPatch() throws {
    let tus = try TusServer()
    defer { tus.stop() }
    let proxy = try HAProxy(backends: [tus.port], balance: .first)
    defer { proxy.stop() }
    let file = UploadClientTests.corpusPath(TuspyTests.jpeg)
    let (report, record) = try TuspyTests.drive(
      port: proxy.port, file: file, ["mode": "cut", "at": 1_500_000, "chunk_size": 4 << 20, "pace_ms": 10])
    #expect(report.cuts == 1)
    // HAProxy resets attachd's side when the client goes, and a reset throws away what the
    // socket still held unread: the resume starts at what attachd had read (most of what a
    // phone's paced upload sent), never past the cut.
    let resumedAt = try #require(report.patch_offsets.dropFirst().first)
    #expect(resumedAt > 0 && resumedAt <= 1_500_000, "resumed at \(resumedAt)")
    #expect(report.status == 200 && report.content_location?.hasPrefix("/v1/attachments/att_") == true)
    let plain = try tus.plainRecord(Array(try Data(contentsOf: URL(fileURLWithPath: file))))
    #expect(TusServer.content(record) == TusServer.content(plain))
    // Location named the address the client used (the proxies keep Host).
    #expect(report.url.hasPrefix("http://127.0.0.1:"))
    #expect(!report.url.contains(":\(tus.port)/"))
  }
}

/// Durability end to end: tuspy's PATCH is under way when attachd is killed with SIGKILL; a new
/// attachd on the same data directory comes up behind the proxy's stable address, and tuspy's
/// own retries resume from the offset the first one had made durable.
@Suite(
  .serialized, .timeLimit(.minutes(3)),
  .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
  .enabled(if: Tuspy.installed, "skipped: tuspy not installed (Scripts/install-deps)"),
  .enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built"))
struct TuspyCrashTests {
  @Test func tuspyResumesAfterAttachdIsKilledMidPatchAndRestarted() throws {
    let root = try LiveTesting.temporaryDirectory()
    let data = root + "/data"
    let environment = ["ATTACHD_UPLOAD_COMMIT_INTERVAL": "0.2", "ATTACHD_UPLOAD_BUFFER_BYTES": "65536"]
    let first = try CrashTests.start(dataDirectory: data, log: root + "/first.log", extra: environment)
    let target = root + "/target"
    try "127.0.0.1:\(first.port)".write(toFile: target, atomically: true, encoding: .utf8)
    let file = UploadClientTests.corpusPath(TuspyTests.jpeg)
    let config: [String: Any] = [
      "target": "unused", "target_file": target, "key": CrashTests.key, "file": file, "mode": "slow",
      "pace_ms": 100, "chunk_size": 4 << 20, "retries": 60, "retry_delay": 0.25,
    ]
    let driver = Process()
    driver.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    driver.arguments = [
      "python3", TuspyTests.driver,
      String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self),
    ]
    let output = Pipe()
    driver.standardOutput = output
    driver.standardError = FileHandle.nullDevice
    try driver.run()
    defer { if driver.isRunning { driver.terminate() } }
    let finished = DispatchSemaphore(value: 0)
    let stdout = Mutex(Data())
    Thread.detachNewThread {
      let data = output.fileHandleForReading.readDataToEndOfFile()
      stdout.withLock { $0 = data }
      finished.signal()
    }
    // Kill once the PATCH has brought a good part of the photo (the commit timer makes it
    // durable every 0.2 s) and is still sending.
    let uploads = data + "/uploads"
    let spooled = LiveTesting.waitUntil(seconds: 30) {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: uploads)) ?? []
      return names.contains { name in
        ((try? FileManager.default.attributesOfItem(atPath: uploads + "/" + name)[.size]) as? Int ?? 0)
          >= 600_000
      }
    }
    #expect(spooled)
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    let second = try CrashTests.start(dataDirectory: data, log: root + "/second.log", extra: environment)
    defer {
      second.process.terminate()
      second.process.waitUntilExit()
    }
    try "127.0.0.1:\(second.port)".write(toFile: target, atomically: true, encoding: .utf8)
    #expect(finished.wait(timeout: .now() + 120) == .success, "tuspy did not finish")
    let printed = stdout.withLock { $0 }
    let report = try JSONDecoder().decode(TuspyTests.Report.self, from: printed)
    let object = try #require(try JSONSerialization.jsonObject(with: printed) as? [String: Any])
    let record = try #require(object["record"] as? [String: Any])
    let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
    // The retry started from what the killed process had acknowledged: not 0, not the end.
    let resumedAt = try #require(report.patch_offsets.dropFirst().first)
    #expect(resumedAt > 0 && resumedAt < size, "resumed at \(resumedAt)")
    #expect(report.status == 200 && report.head_offset == String(size))
    let plain = try TusServer.request(
      port: second.port, "POST", "/v1/attachments", [("Authorization", "Bearer " + CrashTests.key)],
      body: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
    #expect(plain.status == 201)
    #expect(TusServer.content(record) == TusServer.content(try #require(plain.json)))
  }
}
