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

  /// A plain upload with an `Idempotency-Key` has reached node A, which claimed the key and is
  /// processing it, when A is killed with SIGKILL. The client's retry on node B with the same
  /// key is not refused as in progress for the claim's 10-minute lease: node A's session ended
  /// with it, so B takes the claim over and answers 201 within 5 s of the kill; a second retry
  /// is the replay, and there is one record.
  @Test func aRetriedIdempotencyKeyCompletesOnTheOtherNodeWithinSecondsOfAKill() throws {
    let backends = try ScaleOutBackends.make(label: "killkey")
    let nodeA = try Self.start(backends)
    defer { if nodeA.process.isRunning { nodeA.process.terminate() } }
    let nodeB = try Self.start(backends)
    defer { if nodeB.process.isRunning { nodeB.process.terminate() } }
    // Noise: slow to decode and to encode, so node A is caught processing it.
    let path = try DistinctImages.file(seed: 7, width: 4000, height: 3000, noisy: true)
    let body = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let key = "killed-while-processing-1"
    let connection = try TestConnection.live(port: nodeA.port, timeout: 30)
    try connection.send(
      "POST /v1/attachments HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(Self.key)\r\n"
        + "Idempotency-Key: \(key)\r\nContent-Type: image/png\r\nContent-Length: \(body.count)\r\n\r\n")
    try connection.send(body)
    let database = String(try #require(URLComponents(string: backends.postgresURL)).path.dropFirst())
    func claim() -> String {
      let state = try? PostgresServer.shared().psql("SELECT state FROM idempotency_keys", database: database)
      return state?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }
    #expect(LiveTesting.waitUntil(seconds: 30) { !claim().isEmpty }, "node A never claimed the key")
    kill(nodeA.process.processIdentifier, SIGKILL)
    let killed = ContinuousClock.now
    nodeA.process.waitUntilExit()
    #expect(claim() == "running", "node A had finished before the kill: the retry would be a replay")

    func post() throws -> (status: Int32, json: [String: Any]?, headers: String) {
      let headers = try LiveTesting.temporaryDirectory() + "/headers"
      let (status, output) = try LiveTesting.run(
        "/usr/bin/curl",
        [
          "-s", "--max-time", "30", "-D", headers, "--data-binary", "@" + path,
          "-H", "Authorization: Bearer \(Self.key)", "-H", "Idempotency-Key: \(key)",
          "http://127.0.0.1:\(nodeB.port)/v1/attachments",
        ], timeout: 40)
      #expect(status == 0)
      let json = try? JSONSerialization.jsonObject(with: output) as? [String: Any]
      return (status, json, (try? String(contentsOfFile: headers, encoding: .utf8)) ?? "")
    }
    let retry = try post()
    let answered = ContinuousClock.now - killed
    #expect(retry.headers.contains("HTTP/1.1 201"), "\(retry.headers) \(String(describing: retry.json))")
    #expect(answered < .seconds(5), "the retry was answered \(answered) after the kill")
    let again = try post()
    #expect(again.headers.lowercased().contains("idempotent-replayed: true"), "\(again.headers)")
    #expect(again.json?["id"] as? String == retry.json?["id"] as? String)
    let index = try PostgresServer.shared().psql("SELECT count(*) FROM attachments", database: database)
    #expect(index.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    print("CrossNodeCrash: the retried Idempotency-Key answered 201 on node B \(answered) after the kill")
  }

  /// Node A is frozen (SIGSTOP) holding an upload it has committed up to the cut, with bytes of
  /// the wrong content waiting unread in its socket. Node B's offset retrieval waits out the
  /// 3 s writer lease (a frozen node's database session lives on, so only the lease frees the
  /// upload), answers the committed offset, and completes the upload. Thawed (SIGCONT), node A
  /// reads the late bytes and tries to commit them: fenced, it answers its old request 409
  /// `upload_superseded`, and nothing it wrote counts — both nodes report the complete upload,
  /// serve the record of a plain upload of the right bytes, and the bucket holds no object of
  /// the upload.
  @Test func aNodeFrozenPastItsLeaseIsTakenOverAndItsLateWritesChangeNothing() throws {
    let backends = try ScaleOutBackends.make(label: "frozen")
    let lease = 3.0
    let environment = ServeBinaryScaleOutTests.environment(backends).merging(Self.tuning) { $1 }
      .merging(["ATTACHD_UPLOAD_LEASE_DURATION": String(Int(lease))]) { $1 }
    func start() throws -> ServeBinaryTests.Started {
      let dataDirectory = try LiveTesting.temporaryDirectory() + "/data"
      return try ServeBinaryTests().start(
        ["--port", "0", "--data-dir", dataDirectory], environment: environment)
    }
    let nodeA = try start()
    defer {
      kill(nodeA.process.processIdentifier, SIGCONT)
      if nodeA.process.isRunning { nodeA.process.terminate() }
    }
    let nodeB = try start()
    defer { if nodeB.process.isRunning { nodeB.process.terminate() } }
    let image = try CrossNodeUploadTests.largeImage()
    let body = image.bytes
    let cut = CrossNodeUploadTests.cut

    let onA = ResumableClient(version: 6, key: Self.key, port: nodeA.port)
    let stale = try TestConnection.live(port: nodeA.port, timeout: 30)
    try stale.send(onA.creation(length: body.count, contentType: "image/png"))
    let interim = try stale.readResponse()
    let path = ResumableClient.path(of: try #require(interim["Location"]))
    try stale.send(Array(body[0..<cut]))
    #expect(LiveTesting.waitUntil(seconds: 30) { Self.committedOffset(backends, path: path) == cut })
    kill(nodeA.process.processIdentifier, SIGSTOP)
    let frozen = ContinuousClock.now
    // What node A reads when it runs again: bytes at the cut that are not the image's.
    try stale.send([UInt8](repeating: 0xEE, count: 64 << 10))

    // Node B waits out the lease of the frozen node, then the upload is its own.
    let onB = ResumableClient(version: 6, key: Self.key, port: nodeB.port)
    let connection = try TestConnection.live(port: nodeB.port, timeout: 30)
    try connection.send(onB.offsetRetrieval(path))
    let head = try connection.readResponse(forHead: true)
    let tookOver = ContinuousClock.now - frozen
    #expect(head.status == 204 && head["Upload-Offset"] == String(cut), "\(head.status) \(head.text)")
    #expect(tookOver >= .seconds(lease - 0.5), "taken over \(tookOver) after the freeze, inside the lease")
    #expect(tookOver < .seconds(lease + 5), "taken over \(tookOver) after the freeze")
    try connection.send(onB.append(path, offset: cut, length: body.count - cut))
    try connection.send(Array(body[cut...]))
    let final = try connection.readFinal()
    #expect(final.status == 201, "\(final.status) \(final.text)")
    let id = try #require(final.json?["id"] as? String)

    // Thawed, node A's late bytes are refused, and its request is told why.
    kill(nodeA.process.processIdentifier, SIGCONT)
    let superseded = try stale.readFinal()
    #expect(
      superseded.status == 409 && superseded.json?["code"] as? String == "upload_superseded",
      "\(superseded.status) \(superseded.text)")
    Thread.sleep(forTimeInterval: 1)  // node A's commit timer has run since
    for node in [nodeA, nodeB] {
      let client = ResumableClient(version: 6, key: Self.key, port: node.port)
      let reader = try TestConnection.live(port: node.port, timeout: 30)
      try reader.send(client.offsetRetrieval(path))
      let offset = try reader.readResponse(forHead: true)
      #expect(offset["Upload-Offset"] == String(body.count) && offset["Upload-Complete"] == "?1")
      #expect(offset["Content-Location"]?.hasSuffix("/v1/attachments/\(id)") == true, "\(offset.headers)")
    }
    #expect(Self.committedOffset(backends, path: path) == body.count)
    func curl(_ arguments: [String]) throws -> [String: Any]? {
      let (status, output) = try LiveTesting.run(
        "/usr/bin/curl", ["-s", "--max-time", "60", "-H", "Authorization: Bearer \(Self.key)"] + arguments,
        timeout: 70)
      #expect(status == 0)
      return try JSONSerialization.jsonObject(with: output) as? [String: Any]
    }
    let plain = try curl(["--data-binary", "@" + image.path, "http://127.0.0.1:\(nodeA.port)/v1/attachments"])
    #expect(ResumableInteropTests.facts(final.json) == ResumableInteropTests.facts(plain))
    let meta = try curl(["http://127.0.0.1:\(nodeA.port)/v1/attachments/\(id)/meta"])
    #expect(meta?["sha256"] as? String == final.json?["sha256"] as? String)

    // Node A's late bytes never reached the bucket either: the upload left no object behind.
    #expect(try CrossNodeUploadTests.uploadObjects(backends).isEmpty)
    print("FrozenNode: taken over \(tookOver) after SIGSTOP (lease \(lease) s)")
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
