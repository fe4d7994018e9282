import Foundation
import Synchronization
import TestSupport
import Testing

@testable import App

/// Done-when 3: `kill -9` the real binary while 50 uploads are in flight, restart it on the
/// same data directory: every 201 is retrievable byte for byte, no row lacks its blob, `tmp/`
/// is empty.
@Suite(
  .serialized, .timeLimit(.minutes(3)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct CrashTests {
  static let key = "crash-key-0123456789abcdef0123"

  struct Running {
    var process: Process
    var port: Int
  }

  static func start(dataDirectory: String, log: String, extra: [String: String] = [:]) throws -> Running {
    let binary = try #require(ServeBinaryTests.binary)
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["serve", "--port", "0", "--data-dir", dataDirectory, "--access-log", "off"]
    process.environment = [
      "ATTACHD_API_KEYS": "acme:\(key)", "ATTACHD_RATE_LIMIT": "0", "ATTACHD_CONCURRENT_UPLOADS_PER_KEY": "0",
      "ATTACHD_WORKER_QUEUE_LENGTH": "100", "ATTACHD_WORKER_THREADS": "2",
    ].merging(extra) { $1 }
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    try process.run()
    var port: Int?
    _ = LiveTesting.waitUntil(seconds: 20) {
      let lines = (try? LiveTesting.jsonLines(log)) ?? []
      if let address = lines.first(where: { $0["message"] as? String == "listening" })?["address"] as? String
      {
        port = Int(address.split(separator: ":").last ?? "")
      }
      return port != nil || !process.isRunning
    }
    return Running(process: process, port: try #require(port))
  }

  @Test(
    .enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built"),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3"), "sqlite3 not installed"))
  func everyAcknowledgedUploadSurvivesKill9AndNothingHalfWrittenIsVisible() throws {
    let root = try LiveTesting.temporaryDirectory()
    let data = root + "/data"
    let first = try Self.start(dataDirectory: data, log: root + "/first.log")
    let names = [
      "jpeg-orient-1.jpg", "jpeg-orient-3.jpg", "jpeg-orient-6.jpg", "png-palette-trns.png",
      "jpeg-canon-sx60-orient-6.jpg",
    ]
    let replies = Mutex<[(String, Int, String)]>([])  // (file, status, body)
    let group = DispatchGroup()
    for index in 0..<50 {
      group.enter()
      Thread.detachNewThread {
        defer { group.leave() }
        let name = names[index % names.count]
        let path = Corpus.directory!.appendingPathComponent(name).path
        let arguments = [
          "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "60", "--data-binary", "@" + path, "-H",
          "Authorization: Bearer \(Self.key)", "http://127.0.0.1:\(first.port)/v1/attachments",
        ]
        guard let (_, output) = try? LiveTesting.run("/usr/bin/curl", arguments, timeout: 70) else { return }
        let text = String(decoding: output, as: UTF8.self)
        let status = Int(text.split(separator: "\n").last ?? "") ?? 0
        replies.withLock { $0.append((name, status, text)) }
      }
    }
    // Kill once some uploads are acknowledged and others are still running.
    _ = LiveTesting.waitUntil(seconds: 60) { replies.withLock { $0.filter { $0.1 == 201 }.count } >= 10 }
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    group.wait()
    let acknowledged = replies.withLock { $0.filter { $0.1 == 201 } }
    #expect(acknowledged.count >= 10)
    #expect(acknowledged.count < 50, "the kill came too late to test anything in flight")

    let second = try Self.start(dataDirectory: data, log: root + "/second.log")
    defer {
      second.process.terminate()
      second.process.waitUntilExit()
    }
    let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: data + "/tmp")) ?? []
    #expect(leftovers.isEmpty, "tmp/ holds \(leftovers)")
    for (name, _, text) in acknowledged {
      let body = String(text.split(separator: "\n").dropLast().joined(separator: "\n"))
      let record = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
      let id = try #require(record["id"] as? String)
      let (_, image) = try LiveTesting.run(
        "/usr/bin/curl",
        [
          "-s", "-H", "Authorization: Bearer \(Self.key)",
          "http://127.0.0.1:\(second.port)/v1/attachments/\(id)",
        ])
      #expect(image.count == record["bytes"] as? Int, "\(name) \(id)")
      let expected = try UploadClientTests.expected(name, Application.AttachmentOptions())
      #expect([UInt8](image) == expected, "\(name) \(id) differs after restart")
    }
    // Every row the index holds (acknowledged or not) has its complete blob.
    let rows = try LiveTesting.run(
      "/usr/bin/sqlite3", [data + "/index.sqlite", "SELECT blob || ' ' || bytes FROM attachments"]
    ).1
    let lines = String(decoding: rows, as: UTF8.self).split(separator: "\n")
    #expect(lines.count >= acknowledged.count)
    for line in lines {
      let parts = line.split(separator: " ").map(String.init)
      let hash = parts[0]
      let path = "\(data)/blobs/\(hash.prefix(2))/\(hash.dropFirst(2).prefix(2))/\(hash)"
      let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
      #expect(size == Int(parts[1]), "row with blob \(hash) has no complete blob")
    }
  }
}
