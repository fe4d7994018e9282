import AttachdTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import App

/// `kill -9` of the real binary while resumable uploads stream, then a restart on the same data
/// directory: each upload's offset is no larger than what its client sent and no smaller than
/// what the server acknowledged (its last progress `104`), every byte below it is the client's,
/// an append of the rest completes into the plain upload's record, nothing half-written is
/// visible and the crash's temporary state is gone.
@Suite(
  .serialized, .timeLimit(.minutes(3)), .enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct ResumableCrashTests {
  static let files = [
    "heic-iphone13pro-grid-depth-gps.heic", "heic-iphonexs-irot-exif6-gps.heic",
    "heic-iphone7plus-exif6-no-irot.heic",
  ]

  /// One upload in flight: what its client sent, and what the server acknowledged.
  final class Sender: @unchecked Sendable {
    // `path` is written by the sending thread before `done` is signalled and read after.
    let name: String
    let body: [UInt8]
    var path: String?
    let sentBytes = Atomic<Int>(0)
    let acknowledgedBytes = Atomic<Int>(0)
    let done = DispatchSemaphore(value: 0)
    var sent: Int { sentBytes.load(ordering: .acquiring) }
    var acknowledged: Int { acknowledgedBytes.load(ordering: .acquiring) }

    init(name: String, body: [UInt8]) {
      self.name = name
      self.body = body
    }
  }

  @Test(.enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built"))
  func acknowledgedBytesSurviveKill9AndTheUploadsCompleteAfterARestart() throws {
    let root = try LiveTesting.temporaryDirectory()
    let data = root + "/data"
    let environment = ["ATTACHD_UPLOAD_COMMIT_INTERVAL": "0.2", "ATTACHD_UPLOAD_BUFFER_BYTES": "65536"]
    let first = try CrashTests.start(dataDirectory: data, log: root + "/first.log", extra: environment)
    let senders = try Self.files.map { Sender(name: $0, body: [UInt8](try Corpus.data($0))) }
    for sender in senders {
      Thread.detachNewThread { Self.send(sender, port: first.port) }
    }
    // Kill once every upload has an acknowledged offset and is still sending.
    _ = LiveTesting.waitUntil(seconds: 30) { senders.allSatisfy { $0.acknowledged > 0 } }
    kill(first.process.processIdentifier, SIGKILL)
    first.process.waitUntilExit()
    for sender in senders { _ = sender.done.wait(timeout: .now() + 20) }
    #expect(
      senders.allSatisfy { $0.acknowledged > 0 && $0.sent < $0.body.count }, "killed too late or too early")

    let second = try CrashTests.start(dataDirectory: data, log: root + "/second.log", extra: environment)
    defer {
      second.process.terminate()
      second.process.waitUntilExit()
    }
    let plain = try Self.plainRecords(port: second.port)
    for sender in senders {
      let path = try #require(sender.path)
      let client = ResumableClient(version: 6, key: CrashTests.key, port: second.port)
      let connection = try TestConnection.live(port: second.port)
      let asked = ContinuousClock.now
      try connection.send(client.offsetRetrieval(path))
      let head = try connection.readResponse(forHead: true)
      // The restarted process freed the dead one's writer leases at its start: the offset is
      // answered at once, not held for a lease (a minute by default) or the takeover wait.
      let waited = ContinuousClock.now - asked
      #expect(head.status == 204 && waited < .seconds(2), "\(sender.name): \(head.status) after \(waited)")
      let offset = try #require(Int(head["Upload-Offset"] ?? ""))
      #expect(offset <= sender.sent, "\(sender.name): offset \(offset) past the \(sender.sent) bytes sent")
      #expect(
        offset >= sender.acknowledged,
        "\(sender.name): \(offset) below the acknowledged \(sender.acknowledged)")
      // Nothing past the offset is kept: the spool file is cut back to it.
      let spool = data + "/uploads/" + path.split(separator: "/").last!
      let size = (try? FileManager.default.attributesOfItem(atPath: spool)[.size] as? Int) ?? -1
      #expect(size == offset, "\(sender.name): spool holds \(size) bytes, offset \(offset)")
      // The bytes below the offset are the client's.
      let kept = try Data(contentsOf: URL(fileURLWithPath: spool))
      #expect(kept == Data(sender.body[0..<offset]), "\(sender.name): kept bytes differ from those sent")
      try connection.send(client.append(path, offset: offset, length: sender.body.count - offset))
      try connection.send(Array(sender.body[offset...]))
      let final = try connection.readFinal()
      #expect(final.status == 201, "\(sender.name): \(final.status) \(final.text)")
      #expect(ResumableInteropTests.facts(final.json) == plain[sender.name], "\(sender.name)")
    }
    let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: data + "/tmp")) ?? []
    #expect(leftovers.isEmpty, "tmp/ holds \(leftovers)")
    let spools = (try? FileManager.default.contentsOfDirectory(atPath: data + "/uploads")) ?? []
    #expect(spools.isEmpty, "spool files left after the uploads completed: \(spools)")
  }

  /// Sends a creation of the whole body slowly, reading the 104s as they come, until the
  /// connection dies (the kill).
  static func send(_ sender: Sender, port: Int) {
    defer { sender.done.signal() }
    guard let connection = try? TestConnection.live(port: port, timeout: 2) else { return }
    let client = ResumableClient(version: 6, key: CrashTests.key, port: port)
    guard (try? connection.send(client.creation(length: sender.body.count))) != nil,
      let interim = try? connection.readResponse(), let location = interim["Location"]
    else { return }
    sender.path = ResumableClient.path(of: location)
    let reader = Thread {
      // Progress 104s name acknowledged (durable) offsets.
      while let response = try? connection.readResponse(), response.status == 104 {
        if let offset = Int(response["Upload-Offset"] ?? "") {
          sender.acknowledgedBytes.store(offset, ordering: .releasing)
        }
      }
    }
    reader.start()
    let slice = 32 << 10
    while sender.sent < sender.body.count {
      let end = min(sender.body.count, sender.sent + slice)
      guard (try? connection.send(Array(sender.body[sender.sent..<end]))) != nil else { return }
      sender.sentBytes.store(end, ordering: .releasing)
      usleep(40_000)
    }
  }

  /// The records plain uploads of the same files get, by file name.
  static func plainRecords(port: Int) throws -> [String: [String]] {
    var records: [String: [String]] = [:]
    for name in files {
      let (_, output) = try LiveTesting.run(
        "/usr/bin/curl",
        [
          "-s", "--max-time", "60", "--data-binary", "@" + UploadClientTests.corpusPath(name), "-H",
          "Authorization: Bearer \(CrashTests.key)", "http://127.0.0.1:\(port)/v1/attachments",
        ], timeout: 70)
      let json = try JSONSerialization.jsonObject(with: output) as? [String: Any]
      records[name] = ResumableInteropTests.facts(json)
    }
    return records
  }
}
