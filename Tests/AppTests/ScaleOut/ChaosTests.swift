import AttachdTesting
import Foundation
import Glibc
import Storage
import Synchronization
import TestSupport
import Testing

@testable import App

/// Issue 20's chaos run: two `attachd serve` nodes behind the shipped HAProxy configuration, on a
/// SeaweedFS and a PostgreSQL of the run's own, while clients upload — IETF resumable uploads at
/// interop 3, 5, 6, 7 and 8, tus, and plain POSTs retried with an `Idempotency-Key` — and a loop
/// kills a node with SIGKILL and restarts it, freezes one (SIGSTOP) for longer than a writer
/// lease and thaws it, and freezes SeaweedFS or PostgreSQL for a few seconds.
///
/// At the end every upload a client saw acknowledged (a 201, a `Location`, an offset) completed
/// to its record, intact (the record's source size is the body's); every key and every upload
/// has one record, and the index holds exactly one attachment per completed upload; no offset a
/// server reported went below one it had acknowledged; and after a sweep no blob in the bucket
/// is unreferenced. It prints the table. `ATTACHD_CHAOS_SECONDS` (default 40) and
/// `ATTACHD_CHAOS_CLIENTS` (default 8) size the run: `Scripts/chaos` runs 300 s with 40.
@Suite(
  .serialized,
  .enabled(if: ServeBinaryTests.binary != nil && HAProxy.executable != nil, "attachd or haproxy missing"))
struct ChaosTests {
  static let environment = ProcessInfo.processInfo.environment
  static let seconds = Double(environment["ATTACHD_CHAOS_SECONDS"] ?? "") ?? 40
  static let clients = Int(environment["ATTACHD_CHAOS_CLIENTS"] ?? "") ?? 8
  static let key = "0123456789abcdef"
  /// A short writer lease, so a freeze outlasts it within the run.
  static let lease = 3.0

  /// What one client operation came to.
  enum Outcome: Equatable {
    /// Completed to the attachment `id`.
    case done(String)
    /// Never acknowledged (the connection died before a `Location`): nothing to keep.
    case dropped
    /// Acknowledged but not completed before the end: a loss.
    case lost(String)
  }

  struct Operation {
    var kind: String
    var bytes: Int
    var outcome: Outcome
    /// Offsets reported below one acknowledged before (must stay empty).
    var wentBack: [String] = []
    var resumes = 0
    /// The last answers of the resume, for a failure's message.
    var last: [String] = []
    /// Seconds from the first failure to completion, when there was one.
    var waited: Double?
  }

  /// The running cluster: the nodes' processes, restarted on their own ports.
  final class Cluster: @unchecked Sendable {
    let lock = NSLock()
    var nodes: [ServeBinaryTests.Started]
    let directories: [String]
    let environment: [String: String]

    init(backends: ScaleOutBackends) throws {
      let environment = ServeBinaryScaleOutTests.environment(backends).merging([
        "ATTACHD_UPLOAD_COMMIT_INTERVAL": "0.2", "ATTACHD_UPLOAD_BUFFER_BYTES": "65536",
        "ATTACHD_RATE_LIMIT": "0", "ATTACHD_UPLOAD_LEASE_DURATION": String(Int(ChaosTests.lease)),
        "ATTACHD_CONCURRENT_UPLOADS_PER_KEY": "0",
      ]) { $1 }
      self.environment = environment
      let directories = [
        try LiveTesting.temporaryDirectory() + "/a", try LiveTesting.temporaryDirectory() + "/b",
      ]
      self.directories = directories
      nodes = try directories.map {
        try ServeBinaryTests().start(["--port", "0", "--data-dir", $0], environment: environment)
      }
    }

    func process(_ index: Int) -> Process { lock.withLock { nodes[index].process } }

    /// SIGKILL, a second down, then the node again on its port.
    func killAndRestart(_ index: Int) throws {
      let (process, port) = lock.withLock { (nodes[index].process, nodes[index].port) }
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      Thread.sleep(forTimeInterval: 1)
      let started = try ServeBinaryTests().start(
        ["--port", String(port), "--data-dir", directories[index]], environment: environment)
      lock.withLock { nodes[index] = started }
    }

    private var stopped = false

    func stop() {
      let already = lock.withLock {
        defer { stopped = true }
        return stopped
      }
      guard !already else { return }
      for index in nodes.indices {
        let process = self.process(index)
        kill(process.processIdentifier, SIGCONT)
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
      }
    }
  }

  @Test(.timeLimit(.minutes(30)))
  func acknowledgedUploadsSurviveKillsFreezesAndOutagesWithNoTwinAndNoOrphan() throws {
    let postgres = try PostgresServer()
    defer { postgres.stop() }
    let seaweed = try SeaweedFS.start()
    defer { seaweed.stop() }
    let backends = try ScaleOutBackends.make(seaweed: seaweed, postgres: postgres, label: "chaos")
    let cluster = try Cluster(backends: backends)
    defer { cluster.stop() }
    let proxy = try HAProxy(shippedConfigurationFor: cluster.nodes.map(\.port))
    let reader = Uploader(port: proxy.port, body: [], seed: 0, giveUp: Date())
    #expect(LiveTesting.waitUntil(seconds: 20) { (try? reader.get("/readyz"))?.status == 200 })

    let started = Date()
    let end = started.addingTimeInterval(Self.seconds)
    let operations = Mutex<[Operation]>([])
    let events = Mutex<[String: Int]>([:])
    let group = DispatchGroup()
    for client in 0..<Self.clients {
      group.enter()
      Thread.detachNewThread {
        var serial = 0
        while Date() < end {
          let seed = client * 100_000 + serial
          serial += 1
          guard
            let body = try? Data(
              contentsOf: URL(fileURLWithPath: DistinctImages.file(seed: seed, noisy: true)))
          else { continue }
          let op = Uploader(
            port: proxy.port, body: [UInt8](body), seed: seed, giveUp: end.addingTimeInterval(90)
          )
          .run()
          operations.withLock { $0.append(op) }
        }
        group.leave()
      }
    }
    // The chaos: one event every 3 s until the end.
    var generator = SystemRandomNumberGenerator()
    while Date().addingTimeInterval(3) < end {
      Thread.sleep(forTimeInterval: 3)
      let node = Int.random(in: 0...1, using: &generator)
      switch Int.random(in: 0..<4, using: &generator) {
      case 0, 1:
        try cluster.killAndRestart(node)
        events.withLock { $0["kills", default: 0] += 1 }
      case 2:
        let pid = cluster.process(node).processIdentifier
        kill(pid, SIGSTOP)
        Thread.sleep(forTimeInterval: Self.lease + 1.5)
        kill(pid, SIGCONT)
        events.withLock { $0["freezes", default: 0] += 1 }
      default:
        if Bool.random(using: &generator) {
          postgres.pause()
          Thread.sleep(forTimeInterval: 2)
          postgres.resume()
        } else {
          seaweed.pause()
          Thread.sleep(forTimeInterval: 2)
          seaweed.resume()
        }
        events.withLock { $0["outages", default: 0] += 1 }
      }
    }
    #expect(group.wait(timeout: .now() + Self.seconds + 180) == .success, "clients still running")
    let all = operations.withLock { $0 }

    // Every completed upload's record, read back through the balancer: intact, and its own.
    var ids: [String: Int] = [:]
    var damaged = 0
    for op in all {
      guard case .done(let id) = op.outcome else { continue }
      ids[id, default: 0] += 1
      let meta = try? reader.get("/v1/attachments/\(id)/meta")
      let source = (meta?.json?["source"] as? [String: Any])?["bytes"] as? Int
      if meta?.status != 200 || source != op.bytes { damaged += 1 }
    }
    cluster.stop()
    let index = try PostgresIndex(url: backends.postgresURL)
    let stored = try index.statistics().attachments
    let done = ids.count
    let twins = ids.values.filter { $0 > 1 }.count + max(0, stored - done)
    // The sweep an hour on (every pin lapsed), then what the bucket holds that nothing names.
    let store = try AttachmentStore(
      blobs: try backends.blobStore(), index: index, configuration: .init(sweepGrace: 0),
      now: { Date().addingTimeInterval(3_600) })
    let swept = try store.sweep()
    var orphans = 0
    for blob in try backends.blobs() where try index.referenceCount(of: blob) == 0 { orphans += 1 }
    // The uploads' own objects: multipart uploads and tails no upload row owns, swept once; a
    // second sweep finds what the first left.
    let uploads = try S3UploadStore(
      client: S3Client(configuration: backends.s3.clientConfiguration()), index: index,
      settings: .init(
        temporaryDirectory: try LiveTesting.temporaryDirectory(), node: "chaos-sweep", orphanGrace: 0))
    let first = try uploads.sweepOrphans()
    let second = try uploads.sweepOrphans()
    orphans += second.abortedMultipartUploads + second.deletedObjects

    let lost = all.filter { if case .lost = $0.outcome { true } else { false } }
    let wentBack = all.flatMap(\.wentBack)
    let counted = events.withLock { $0 }
    func count(_ include: (ChaosTests.Operation) -> Bool) -> String { String(all.filter(include).count) }
    let longest = all.compactMap(\.waited).max() ?? 0
    var table: [(String, String)] = [("seconds", String(Int(Date().timeIntervalSince(started))))]
    table.append(("clients", String(Self.clients)))
    table.append(("operations", String(all.count)))
    table.append(("kills", String(counted["kills"] ?? 0)))
    table.append(("freezes", String(counted["freezes"] ?? 0)))
    table.append(("outages", String(counted["outages"] ?? 0)))
    table.append(("acknowledged", count { $0.outcome != .dropped }))
    table.append(("resumed or retried", count { $0.resumes > 0 }))
    table.append(("dropped before a Location", count { $0.outcome == .dropped }))
    table.append(("lost", String(lost.count)))
    table.append(("duplicated", String(twins)))
    let leftovers = swept.deletedBlobs + first.abortedMultipartUploads + first.deletedObjects
    table.append(("swept (crash leftovers)", String(leftovers)))
    table.append(("orphans after the sweep", String(orphans)))
    table.append(("damaged", String(damaged)))
    table.append(("offsets that went back", String(wentBack.count)))
    table.append(("longest wait to resume (s)", String(format: "%.1f", longest)))
    print("CHAOS " + table.map { "\($0.0)=\($0.1)" }.joined(separator: " | "))
    for (name, value) in table {
      print(String(format: "chaos: %-28@ %@", name as NSString, value as NSString))
    }
    #expect(lost.isEmpty, "\(lost.prefix(5).map { "\($0.kind): \($0.outcome) \($0.last)" })")
    #expect(twins == 0, "\(stored) attachments for \(done) completed uploads")
    #expect(orphans == 0)
    #expect(damaged == 0)
    #expect(wentBack.isEmpty, "\(wentBack.prefix(5))")
    #expect(all.count >= Self.clients, "too few operations to judge: \(all.count)")
  }
}

/// One client operation through the balancer, retried and resumed until it completes or
/// `giveUp`: a resumable upload at an interop version, a tus upload, or a plain POST with an
/// `Idempotency-Key`, chosen by `seed`.
struct Uploader {
  let port: Int
  let body: [UInt8]
  let seed: Int
  let giveUp: Date
  let bearer = "Authorization: Bearer \(ChaosTests.key)"

  func run() -> ChaosTests.Operation {
    switch seed % 7 {
    case 0...4: resumable(version: [3, 5, 6, 7, 8][seed % 7])
    case 5: tus()
    default: plain()
    }
  }

  /// An exchange on a new connection: the head, then the body (in four paced pieces, so a kill
  /// can land inside it); every response up to the final one.
  /// `seen` hears each response as it arrives, also when the exchange then fails.
  func exchange(
    _ head: String, body: [UInt8] = [], readInterimFirst: Bool = false,
    seen: (TestResponse) -> Void = { _ in }
  ) throws -> [TestResponse] {
    let connection = try TestConnection.live(port: port, timeout: 20)
    defer { connection.close() }
    try connection.send(head)
    var responses: [TestResponse] = []
    func read() throws {
      let response = try connection.readResponse()
      seen(response)
      responses.append(response)
    }
    if readInterimFirst {
      try read()
      if responses[0].status >= 200 { return responses }
    }
    let piece = max(1, body.count / 4)
    for start in stride(from: 0, to: body.count, by: piece) {
      try connection.send(Array(body[start..<min(body.count, start + piece)]))
      usleep(20_000)
    }
    while responses.last.map({ $0.status < 200 }) ?? true { try read() }
    return responses
  }

  /// `GET path` with the key.
  func get(_ path: String) throws -> TestResponse? {
    try exchange(TestConnection.head("GET \(path) HTTP/1.1", ["Host: 127.0.0.1:\(port)", bearer])).last
  }

  static func path(_ location: String?) -> String? {
    guard let location else { return nil }
    return location.hasPrefix("/") ? location : URL(string: location)?.path
  }

  func resumable(version: Int) -> ChaosTests.Operation {
    var op = ChaosTests.Operation(kind: "interop \(version)", bytes: body.count, outcome: .dropped)
    let client = ResumableClient(version: version, key: ChaosTests.key, port: port)
    var location: String?
    var acknowledged = 0
    var failed: Date?
    func note(_ response: TestResponse) {
      if let path = Self.path(response["Location"]), path.hasPrefix("/v1/uploads/") { location = path }
      if let offset = response["Upload-Offset"].flatMap(Int.init) {
        if offset < acknowledged { op.wentBack.append("\(op.kind): \(offset) after \(acknowledged)") }
        acknowledged = max(acknowledged, offset)
      }
    }
    func finish(_ id: String) -> ChaosTests.Operation {
      op.outcome = .done(id)
      op.waited = failed.map { Date().timeIntervalSince($0) }
      return op
    }
    // The creation: the 104 (its Location) first, then the body.
    while location == nil && Date() < giveUp {
      do {
        let responses = try exchange(
          client.creation(length: body.count), body: body, readInterimFirst: true, seen: note)
        if let last = responses.last, last.status == 201, let id = last.json?["id"] as? String {
          return finish(id)
        }
      } catch {}
      if location == nil { usleep(300_000) }
    }
    guard let path = location else { return op }
    failed = Date()
    op.outcome = .lost(path)
    while Date() < giveUp {
      op.resumes += 1
      do {
        let head = try exchange(client.offsetRetrieval(path))
        op.last = (op.last + ["HEAD \(head.last.map { "\($0.status) \($0.text.prefix(120))" } ?? "-")"])
          .suffix(4)
        guard let offsetHead = head.last, offsetHead.status == 204,
          let offset = offsetHead["Upload-Offset"].flatMap(Int.init)
        else {
          usleep(500_000)
          continue
        }
        note(offsetHead)
        // Every byte in and processed: the HEAD names the attachment. In, not processed (its
        // answer lost with a node): the last append again, empty, processes it.
        if offset >= body.count, let made = offsetHead["Content-Location"], made.contains("/v1/attachments/")
        {
          return finish(String(made.split(separator: "/").last ?? ""))
        }
        let rest = Array(body[min(offset, body.count)...])
        let answer = try exchange(
          client.append(path, offset: offset, length: rest.count), body: rest, seen: note
        )
        .last
        op.last = (op.last + ["PATCH \(answer.map { "\($0.status) \($0.text.prefix(160))" } ?? "-")"]).suffix(
          4)
        if let answer, [200, 201].contains(answer.status), let id = answer.json?["id"] as? String {
          return finish(id)
        }
      } catch {}
      usleep(300_000)
    }
    return op
  }

  func tus() -> ChaosTests.Operation {
    var op = ChaosTests.Operation(kind: "tus", bytes: body.count, outcome: .dropped)
    let common = ["Host: 127.0.0.1:\(port)", bearer, "Tus-Resumable: 1.0.0"]
    var path: String?
    while path == nil && Date() < giveUp {
      if let created = try? exchange(
        TestConnection.head(
          "POST /v1/tus HTTP/1.1", common + ["Upload-Length: \(body.count)", "Content-Length: 0"])
      ).last, created.status == 201 {
        path = Self.path(created["Location"])
      } else {
        usleep(300_000)
      }
    }
    guard let path else { return op }
    op.outcome = .lost(path)
    var acknowledged = 0
    var failed: Date?
    while Date() < giveUp {
      do {
        let head = try exchange(TestConnection.head("HEAD \(path) HTTP/1.1", common)).last
        guard let head, head.status == 200, let offset = head["Upload-Offset"].flatMap(Int.init) else {
          failed = failed ?? Date()
          usleep(500_000)
          continue
        }
        if offset < acknowledged { op.wentBack.append("tus: \(offset) after \(acknowledged)") }
        acknowledged = max(acknowledged, offset)
        if offset >= body.count {
          let got = try exchange(TestConnection.head("GET \(path) HTTP/1.1", common)).last
          if let got, got.status == 200, let id = got.json?["id"] as? String {
            op.outcome = .done(id)
            op.waited = failed.map { Date().timeIntervalSince($0) }
            return op
          }
        } else {
          // Two PATCHes of half the body each.
          let rest = Array(body[offset..<min(body.count, offset + max(1, body.count / 2))])
          let answer = try exchange(
            TestConnection.head(
              "PATCH \(path) HTTP/1.1",
              common + [
                "Upload-Offset: \(offset)", "Content-Type: application/offset+octet-stream",
                "Content-Length: \(rest.count)",
              ]), body: rest
          ).last
          if let answer, answer.status == 204, let now = answer["Upload-Offset"].flatMap(Int.init) {
            acknowledged = max(acknowledged, now)
            continue
          }
        }
      } catch {}
      failed = failed ?? Date()
      op.resumes += 1
      usleep(300_000)
    }
    return op
  }

  func plain() -> ChaosTests.Operation {
    var op = ChaosTests.Operation(kind: "plain + Idempotency-Key", bytes: body.count, outcome: .dropped)
    let head = TestConnection.head(
      "POST /v1/attachments HTTP/1.1",
      [
        "Host: 127.0.0.1:\(port)", bearer, "Content-Type: image/png", "Content-Length: \(body.count)",
        "Idempotency-Key: chaos-\(seed)",
      ])
    var failed: Date?
    var first: String?
    while Date() < giveUp {
      if let answer = try? exchange(head, body: body).last, answer.status == 201,
        let id = answer.json?["id"] as? String
      {
        // The key's answer is that record, whoever answers a repeat.
        guard let known = first else {
          first = id
          continue
        }
        if known != id { op.wentBack.append("key chaos-\(seed): \(known) then \(id)") }
        op.outcome = .done(known)
        op.waited = failed.map { Date().timeIntervalSince($0) }
        return op
      }
      if first == nil { op.outcome = .lost("key chaos-\(seed)") }
      failed = failed ?? Date()
      op.resumes += 1
      usleep(300_000)
    }
    if let first { op.outcome = .done(first) }
    return op
  }
}
