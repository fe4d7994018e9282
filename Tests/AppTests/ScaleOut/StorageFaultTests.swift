import Crypto
import Foundation
import Storage
import TestSupport
import Testing

@testable import App

/// The object store and then the index server stopped under a running App, each with a server
/// of the test's own: uploads and reads answer 503 `storage_unavailable` with `Retry-After`
/// within the configured timeouts, `/readyz` says 503, nothing acknowledged is lost, and once
/// the server is back the same App serves again (no restart).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct StorageFaultTests {
  /// Short S3 timeouts: a refused connection fails at once, a silent one after 1–3 s.
  static let timeouts = S3Client.Timeouts(connect: 1, idle: 1, request: 3)

  /// Uploads `count` distinct images; returns id → sha256.
  static func store(_ count: Int, on node: AttachmentServer, seed: Int) throws -> [String: String] {
    var stored: [String: String] = [:]
    for n in 0..<count {
      let reply = try node.upload(file: try DistinctImages.file(seed: seed + n))
      #expect(reply.status == 201)
      let record = try #require(reply.json)
      stored[try #require(record["id"] as? String)] = try #require(record["sha256"] as? String)
    }
    return stored
  }

  /// Every stored image reads back whole with its hash.
  static func expectIntact(_ stored: [String: String], on node: AttachmentServer) throws {
    for (id, sha) in stored {
      let reply = try node.image(id)
      #expect(reply.status == 200 && Hex.encode(SHA256.hash(Array(reply.body))) == sha, "\(id)")
    }
  }

  /// An upload while a backend is down: 503 storage_unavailable with Retry-After within `bound`.
  static func expectUnavailableUpload(_ node: AttachmentServer, bound: TimeInterval, seed: Int) throws {
    let file = try DistinctImages.file(seed: seed)
    let started = Date()
    let reply = try node.upload(file: file, headers: ["Idempotency-Key: retry-\(seed)"])
    let elapsed = Date().timeIntervalSince(started)
    #expect(reply.status == 503 && reply.code == "storage_unavailable", "\(reply.status) \(reply.code ?? "")")
    #expect(reply.headers["retry-after"] == "5")
    #expect(elapsed < bound, "took \(elapsed) s, bound \(bound) s")
  }

  /// Polls `/readyz` until it answers `status` (the probe's answer lives 2 s).
  static func expectReadiness(_ node: AttachmentServer, _ status: Int, within seconds: TimeInterval) throws {
    let deadline = Date().addingTimeInterval(seconds)
    var last = 0
    repeat {
      last = try node.readyStatus()
      if last == status { return }
      usleep(200_000)
    } while Date() < deadline
    Issue.record("/readyz answered \(last), not \(status), for \(seconds) s")
  }

  /// An event log in a temp file, and a check that no credential of `backends` reached it.
  static func eventLog() throws -> (EventLog, String) {
    let path = try LiveTesting.temporaryDirectory() + "/events.log"
    return (EventLog(sink: try LogSink(appendingTo: path)), path)
  }

  static func expectNoCredential(in path: String, _ log: EventLog, _ backends: ScaleOutBackends) throws {
    log.flush()
    let text = try String(contentsOfFile: path, encoding: .utf8)
    // The outage was logged (with the store's own words) …
    #expect(text.contains("storage_unavailable") && text.contains("not ready"))
    // … and none of it names a credential.
    let password = try #require(URLComponents(string: backends.postgresURL)?.password)
    for credential in [backends.s3.secretAccessKey, backends.s3.accessKeyId, password] {
      #expect(!text.contains(credential))
    }
  }

  @Test func aStoppedObjectStoreAnswers503AndTheNodeRecoversWhenItIsBack() throws {
    let seaweed = try SeaweedFS.start()
    defer { seaweed.stop() }
    let backends = try ScaleOutBackends.make(
      seaweed: seaweed, label: "s3fault", timeouts: Self.timeouts, attempts: 2)
    let (log, logPath) = try Self.eventLog()
    let node = try AttachmentServer(eventLog: log) { backends.apply(&$0) }
    defer { node.stop() }
    let stored = try Self.store(3, on: node, seed: 300)
    try Self.expectReadiness(node, 200, within: 5)

    seaweed.stop()
    // Worst case of one S3 call (both attempts timing out), plus the image work and curl.
    let bound = backends.s3.clientConfiguration().worstCaseDuration + 5
    try Self.expectUnavailableUpload(node, bound: bound, seed: 310)
    let read = try node.image(stored.keys.first!)
    #expect(read.status == 503 && read.code == "storage_unavailable" && read.headers["retry-after"] == "5")
    // What the index alone answers still works.
    let meta = try node.curl(
      "/v1/attachments/\(stored.keys.first!)/meta", ["-H", AttachmentServer.bearer(AttachmentServer.acmeKey)])
    #expect(meta.status == 200)
    try Self.expectReadiness(node, 503, within: 10)

    try seaweed.restart()
    try Self.expectReadiness(node, 200, within: 20)
    try Self.expectIntact(stored, on: node)
    // The failed upload was not remembered: its retry with the same key is stored now.
    let retried = try node.upload(
      file: try DistinctImages.file(seed: 310), headers: ["Idempotency-Key: retry-310"])
    #expect(retried.status == 201 && retried.headers["idempotent-replayed"] == nil)
    #expect(try backends.blobs().count == 4)
    try Self.expectNoCredential(in: logPath, log, backends)
  }

  @Test func aFrozenObjectStoreTimesOutAs503WithinTheConfiguredTimeouts() throws {
    let seaweed = try SeaweedFS.start()
    defer {
      seaweed.resume()
      seaweed.stop()
    }
    let backends = try ScaleOutBackends.make(
      seaweed: seaweed, label: "s3frozen", timeouts: Self.timeouts, attempts: 2)
    let node = try AttachmentServer { backends.apply(&$0) }
    defer { node.stop() }
    let stored = try Self.store(1, on: node, seed: 350)

    // Connections are accepted by the kernel and nothing answers: only the timeouts can tell.
    seaweed.pause()
    let bound = backends.s3.clientConfiguration().worstCaseDuration + 5
    try Self.expectUnavailableUpload(node, bound: bound, seed: 360)
    try Self.expectReadiness(node, 503, within: 15)

    seaweed.resume()
    try Self.expectReadiness(node, 200, within: 20)
    try Self.expectIntact(stored, on: node)
  }

  @Test func aStoppedIndexServerAnswers503AndTheNodeRecoversWhenItIsBack() throws {
    let postgres = try PostgresServer()
    let backends = try ScaleOutBackends.make(postgres: postgres, label: "pgfault")
    let (log, logPath) = try Self.eventLog()
    let node = try AttachmentServer(eventLog: log) { backends.apply(&$0, postgresTimeout: 1) }
    defer { node.stop() }
    let stored = try Self.store(3, on: node, seed: 400)
    try Self.expectReadiness(node, 200, within: 5)

    postgres.stop()
    try Self.expectUnavailableUpload(node, bound: 10, seed: 410)
    for path in ["/v1/attachments/\(stored.keys.first!)", "/v1/attachments/\(stored.keys.first!)/meta"] {
      let started = Date()
      let reply = try node.curl(path, ["-H", AttachmentServer.bearer(AttachmentServer.acmeKey)])
      #expect(
        reply.status == 503 && reply.code == "storage_unavailable" && reply.headers["retry-after"] == "5")
      #expect(Date().timeIntervalSince(started) < 5)
    }
    try Self.expectReadiness(node, 503, within: 10)

    try postgres.start()
    try Self.expectReadiness(node, 200, within: 20)
    try Self.expectIntact(stored, on: node)
    let retried = try node.upload(
      file: try DistinctImages.file(seed: 410), headers: ["Idempotency-Key: retry-410"])
    #expect(retried.status == 201 && retried.headers["idempotent-replayed"] == nil)
    #expect(try backends.blobs().count == 4)
    try Self.expectNoCredential(in: logPath, log, backends)
  }
}
