import AttachdTesting
import Foundation
import Storage
import Synchronization
import TestSupport
import Testing

@testable import App

/// Two `attachd serve` processes on one S3 bucket and one PostgreSQL database; node A is killed
/// with SIGKILL while a resumable upload streams into it, past its first 5 MiB part. Node B,
/// with the default minute-long writer lease, sees at once that node A is gone (its liveness
/// lock ended with its session) and answers an offset no larger than what the client sent and
/// no smaller than what node A acknowledged; an append of the rest completes into the record a
/// plain upload of the same bytes gets, within 5 s of the kill.
@Suite(
  .serialized, .timeLimit(.minutes(3)),
  .enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built"))
struct CrossNodeCrashTests {
  static let key = "0123456789abcdef"
  /// Commits five times a second, in small writes; the lease is the default one.
  static let tuning = [
    "ATTACHD_UPLOAD_COMMIT_INTERVAL": "0.2", "ATTACHD_UPLOAD_BUFFER_BYTES": "65536",
    "ATTACHD_RATE_LIMIT": "0",
  ]

  static func start(_ backends: ScaleOutBackends) throws -> ServeBinaryTests.Started {
    let environment = ServeBinaryScaleOutTests.environment(backends).merging(tuning) { $1 }
    return try ServeBinaryTests().start(
      ["--port", "0", "--data-dir", try LiveTesting.temporaryDirectory() + "/data"], environment: environment)
  }

  @Test func acknowledgedBytesSurviveKill9OfOneNodeAndTheOtherCompletesTheUpload() throws {
    let backends = try ScaleOutBackends.make(label: "kill9")
    let nodeA = try Self.start(backends)
    defer { if nodeA.process.isRunning { nodeA.process.terminate() } }
    let nodeB = try Self.start(backends)
    defer {
      nodeB.process.terminate()
      nodeB.process.waitUntilExit()
    }
    let image = try CrossNodeUploadTests.largeImage()
    let sender = Sender(body: image.bytes)
    Thread.detachNewThread { Self.send(sender, port: nodeA.port) }
    // Kill once node A has committed bytes past its first part, while the client still sends.
    // (A request tells its client of a few commits only: the index knows them all.)
    let partSize = S3Client.minimumPartSize
    var committed = 0
    _ = LiveTesting.waitUntil(seconds: 60) {
      committed = Self.committedOffset(backends, path: sender.path)
      return committed > partSize || sender.sent == sender.body.count
    }
    kill(nodeA.process.processIdentifier, SIGKILL)
    let killed = Date()
    nodeA.process.waitUntilExit()
    #expect(sender.done.wait(timeout: .now() + 20) == .success)
    let acknowledged = max(committed, sender.acknowledged)
    #expect(
      committed > partSize && sender.sent < sender.body.count,
      "killed too late or too early: committed \(committed), sent \(sender.sent)")
    #expect(sender.acknowledged > 0, "node A acknowledged nothing to its client")
    let path = try #require(sender.path)

    // Node B settles the upload: node A is gone, so its lease binds no one.
    let client = ResumableClient(version: 6, key: Self.key, port: nodeB.port)
    let connection = try TestConnection.live(port: nodeB.port, timeout: 30)
    try connection.send(client.offsetRetrieval(path))
    let head = try connection.readResponse(forHead: true)
    #expect(head.status == 204)
    let offset = try #require(Int(head["Upload-Offset"] ?? ""))
    #expect(offset <= sender.sent, "offset \(offset) past the \(sender.sent) bytes sent")
    #expect(offset >= acknowledged, "offset \(offset) below the acknowledged \(acknowledged)")
    // The offset is backed by node A's parts and tail in the bucket (no tail when it fell on a
    // part's end). The kill may leave a part node A never committed (node B sends that number
    // again) and the tail a commit replaced (swept as an orphan, or with the upload).
    let left = try CrossNodeUploadTests.inFlight(backends, path: path)
    #expect(left.parts.allSatisfy { $0 == partSize } && left.tails.count <= 2, "\(left)")
    let backed = ([0] + left.tails).contains { tail in
      let parts = (offset - tail) / partSize
      return tail < partSize && (offset - tail) % partSize == 0 && parts >= 1 && parts <= left.parts.count
    }
    #expect(backed, "offset \(offset): parts \(left.parts), tails \(left.tails)")
    try connection.send(client.append(path, offset: offset, length: sender.body.count - offset))
    try connection.send(Array(sender.body[offset...]))
    let final = try connection.readFinal()
    #expect(final.status == 201, "\(final.status) \(final.text)")
    let resumed = Date().timeIntervalSince(killed)
    #expect(resumed < 5, "the upload completed \(resumed) s after the kill")
    print("CrossNodeCrash: completed on node B \(String(format: "%.2f", resumed)) s after node A's SIGKILL")

    // Only the bytes the client sent below the offset can give the plain upload's record.
    let (status, output) = try LiveTesting.run(
      "/usr/bin/curl",
      [
        "-s", "--max-time", "60", "--data-binary", "@" + image.path, "-H",
        "Authorization: Bearer \(Self.key)",
        "http://127.0.0.1:\(nodeB.port)/v1/attachments",
      ], timeout: 70)
    #expect(status == 0)
    let plain = try JSONSerialization.jsonObject(with: output) as? [String: Any]
    #expect(ResumableInteropTests.facts(final.json) == ResumableInteropTests.facts(plain))
    #expect(try CrossNodeUploadTests.uploadObjects(backends).isEmpty)
  }

  /// One upload in flight: what its client sent, and what node A told it was acknowledged.
  final class Sender: Sendable {
    let body: [UInt8]
    let sentBytes = Atomic<Int>(0)
    let acknowledgedBytes = Atomic<Int>(0)
    let location = Mutex<String?>(nil)
    let done = DispatchSemaphore(value: 0)
    var sent: Int { sentBytes.load(ordering: .acquiring) }
    var acknowledged: Int { acknowledgedBytes.load(ordering: .acquiring) }
    /// The upload URL's path, once the creation's `104` named it.
    var path: String? { location.withLock { $0 } }

    init(body: [UInt8]) { self.body = body }
  }

  /// The upload's committed offset in the shared index (0 before it exists).
  static func committedOffset(_ backends: ScaleOutBackends, path: String?) -> Int {
    guard let id = path?.split(separator: "/").last,
      let components = URLComponents(string: backends.postgresURL)
    else { return 0 }
    let database = String(components.path.dropFirst())
    let output = try? PostgresServer.shared().psql(
      "SELECT received FROM uploads WHERE id = '\(id)'", database: database)
    return Int(output?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
  }

  /// Sends a creation of the whole body at about 1.6 MB/s, reading the progress `104`s (each
  /// names an acknowledged offset) as they come, until the body is out or the connection dies.
  static func send(_ sender: Sender, port: Int) {
    defer { sender.done.signal() }
    guard let connection = try? TestConnection.live(port: port, timeout: 20) else { return }
    let client = ResumableClient(version: 6, key: key, port: port)
    guard (try? connection.send(client.creation(length: sender.body.count, contentType: "image/png"))) != nil,
      let interim = try? connection.readResponse(), let location = interim["Location"]
    else { return }
    sender.location.withLock { $0 = ResumableClient.path(of: location) }
    Thread.detachNewThread {
      while let response = try? connection.readResponse(), response.status == 104 {
        if let offset = Int(response["Upload-Offset"] ?? "") {
          sender.acknowledgedBytes.store(offset, ordering: .releasing)
        }
      }
    }
    let slice = 32 << 10
    while sender.sent < sender.body.count {
      let end = min(sender.body.count, sender.sent + slice)
      guard (try? connection.send(Array(sender.body[sender.sent..<end]))) != nil else { return }
      sender.sentBytes.store(end, ordering: .releasing)
      usleep(20_000)
    }
  }
}
