import AttachdTesting
import Crypto
import Foundation
import Storage
import TestSupport
import Testing

@testable import App

/// Two App nodes on one S3 bucket and one PostgreSQL database behind HAProxy on loopback:
/// uploads through the balancer land on both nodes and each serves the other's; an IETF
/// resumable upload and a tus upload started on node A, cut mid-body and resumed directly on
/// node B complete to the record a plain upload of the same bytes gets, as do uploads cut and
/// resumed through the balancer (IETF and tuspy), and a resume on node B while node A's request
/// is still open and silent takes the upload over at once. The cut falls past the first 5 MiB
/// part, so node B continues a multipart upload node A began and fetches the tail object node A
/// committed.
@Suite(
  .serialized, .timeLimit(.minutes(4)),
  .enabled(if: HAProxy.executable != nil, "skipped: haproxy not installed (Scripts/install-deps)"))
struct CrossNodeUploadTests {
  static let key = AttachmentServer.acmeKey
  /// Past the first part, well before the end of `largeImage`.
  static let cut = S3Client.minimumPartSize + 300_000

  /// A noisy PNG of two full parts and a tail (about 13 MB): its path and bytes.
  static func largeImage() throws -> (path: String, bytes: [UInt8]) {
    let path = try DistinctImages.file(seed: 4242, width: 2400, height: 1800, noisy: true)
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    #expect(bytes.count > cut + S3Client.minimumPartSize / 2, "the image is too small to cut past a part")
    return (path, bytes)
  }

  @Test func uploadsThroughTheBalancerLandOnBothNodesAndEachServesTheOthers() throws {
    let cluster = try TwoNodeCluster(label: "balanced")
    defer { cluster.stop() }
    let count = 8
    var records: [[String: Any]] = []
    for seed in 0..<count {
      let (status, output) = try LiveTesting.run(
        "/usr/bin/curl",
        [
          "-s", "-i", "--max-time", "30", "--data-binary", "@" + (try DistinctImages.file(seed: 300 + seed)),
          "-H", AttachmentServer.bearer(Self.key), "http://127.0.0.1:\(cluster.proxy.port)/v1/attachments",
        ], timeout: 35)
      #expect(status == 0)
      let reply = try AttachmentServer.parseFinal(output)
      #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
      records.append(try #require(reply.json))
    }
    // Each node counted its own share: both took some, together all.
    let stored = try cluster.nodes.map {
      try TwoNodeCluster.answered($0, route: "/v1/attachments", method: "POST", status: 201)
    }
    #expect(stored.allSatisfy { $0 > 0 } && stored.reduce(0, +) == count, "uploads per node: \(stored)")
    #expect(try cluster.backends.blobs().count == count)

    // Every attachment is served whole by both nodes, by id and by its signed link.
    for record in records {
      let id = try #require(record["id"] as? String)
      let sha = try #require(record["sha256"] as? String)
      let signed = try #require(record["signed_url"] as? String)
      for node in cluster.nodes {
        let image = try node.image(id)
        #expect(image.status == 200 && Hex.encode(SHA256.hash(Array(image.body))) == sha, "\(id)")
        let linked = try node.curl(signed, [])
        #expect(linked.status == 200 && Hex.encode(SHA256.hash(Array(linked.body))) == sha, "\(id)")
      }
    }
    // Deleting through the balancer removes the attachment for both nodes.
    let gone = try #require(records.first?["id"] as? String)
    let (deleteStatus, deleteOutput) = try LiveTesting.run(
      "/usr/bin/curl",
      [
        "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-X", "DELETE", "-H",
        AttachmentServer.bearer(Self.key), "http://127.0.0.1:\(cluster.proxy.port)/v1/attachments/\(gone)",
      ], timeout: 35)
    #expect(deleteStatus == 0 && String(decoding: deleteOutput, as: UTF8.self) == "204")
    for node in cluster.nodes { #expect(try node.image(gone).status == 404) }
    #expect(try cluster.backends.blobs().count == count - 1)
  }

  @Test(arguments: [8, 6, 3])
  func aResumableUploadCutOnOneNodeIsResumedOnTheOtherIntoThePlainRecord(version: Int) throws {
    let cluster = try TwoNodeCluster(label: "resumable\(version)")
    defer { cluster.stop() }
    let image = try Self.largeImage()
    let body = image.bytes
    let onA = ResumableClient(version: version, key: Self.key, port: TwoNodeCluster.port(cluster.a))
    let first = try TestConnection.live(port: onA.port)
    try first.send(onA.creation(length: body.count, contentType: "image/png"))
    let interim = try first.readResponse()
    #expect(interim.status == 104)
    let location = try #require(interim["Location"])
    try first.send(Array(body[0..<Self.cut]))
    // Let the bytes land before the drop, as a radio that stops mid-transfer would.
    usleep(100_000)
    first.close()

    let path = ResumableClient.path(of: location)
    let onB = ResumableClient(version: version, key: Self.key, port: TwoNodeCluster.port(cluster.b))
    let second = try TestConnection.live(port: onB.port, timeout: 30)
    try second.send(onB.offsetRetrieval(path))
    let offset = try second.readResponse(forHead: true)
    #expect(offset.status == 204)
    // Node B answers what node A received and committed when its client went: all of it.
    #expect(offset["Upload-Offset"] == String(Self.cut))
    let resumeAt = try #require(Int(offset["Upload-Offset"] ?? ""))
    // What node B resumes from is what node A left in the bucket: a part and the tail after it.
    let left = try Self.inFlight(cluster.backends, path: path)
    #expect(left.parts == [S3Client.minimumPartSize] && left.tails == [Self.cut - S3Client.minimumPartSize])
    try second.send(onB.append(path, offset: resumeAt, length: body.count - resumeAt))
    try second.send(Array(body[resumeAt...]))
    let final = try second.readFinal()
    #expect(final.status == 201, "\(final.status) \(final.text)")
    #expect(
      final[version == 3 ? "Upload-Incomplete" : "Upload-Complete"] == (version == 3 ? "?0" : "?1"))

    // The append was node B's alone.
    #expect(try TwoNodeCluster.answered(cluster.b, route: "/v1/uploads", method: "PATCH", status: 201) == 1)
    #expect(try TwoNodeCluster.answered(cluster.a, route: "/v1/uploads", method: "PATCH", status: 201) == 0)
    let plain = try cluster.a.upload(file: image.path)
    #expect(plain.status == 201)
    #expect(ResumableInteropTests.facts(final.json) == ResumableInteropTests.facts(plain.json))
    // The stored image node A serves is the one node B completed.
    let id = try #require(final.json?["id"] as? String)
    let served = try cluster.a.image(id)
    #expect(
      served.status == 200 && Hex.encode(SHA256.hash(Array(served.body))) == plain.json?["sha256"] as? String)
    // Nothing of the upload is left in the bucket once its result is recorded.
    #expect(try Self.uploadObjects(cluster.backends).isEmpty)
  }

  @Test func aTusUploadCutOnOneNodeIsResumedOnTheOtherIntoThePlainRecord() throws {
    let cluster = try TwoNodeCluster(label: "tus")
    defer { cluster.stop() }
    let image = try Self.largeImage()
    let body = image.bytes
    let portA = TwoNodeCluster.port(cluster.a)
    let portB = TwoNodeCluster.port(cluster.b)
    let created = try TusServer.request(
      port: portA, "POST", "/v1/tus", [TusServer.tus, TusServer.acme, ("Upload-Length", String(body.count))])
    #expect(created.status == 201)
    let location = try #require(created["Location"])
    let path = try #require(URL(string: location)?.path)

    // A PATCH announcing every byte, cut after `cut` of them.
    let first = try TestClient(.live(port: portA)).start(
      "PATCH", path,
      headers: TusServer.headers(
        port: portA,
        [
          TusServer.tus, TusServer.acme, TusServer.stream, ("Upload-Offset", "0"),
          ("Content-Length", String(body.count)),
        ]))
    try first.send(Array(body[0..<Self.cut]))
    usleep(100_000)
    first.cancel()

    let offset = try TusServer.request(
      port: portB, "HEAD", path, [TusServer.tus, TusServer.acme], timeout: 30)
    #expect(offset.status == 200)
    #expect(offset["Upload-Offset"] == String(Self.cut))
    let resumeAt = try #require(Int(offset["Upload-Offset"] ?? ""))
    let left = try Self.inFlight(cluster.backends, path: path)
    #expect(left.parts == [S3Client.minimumPartSize] && left.tails == [Self.cut - S3Client.minimumPartSize])
    let appended = try TusServer.request(
      port: portB, "PATCH", path,
      [TusServer.tus, TusServer.acme, TusServer.stream, ("Upload-Offset", String(resumeAt))],
      body: Array(body[resumeAt...]), timeout: 30)
    #expect(appended.status == 204)
    #expect(appended["Upload-Offset"] == String(body.count))
    let attachment = try #require(appended["Content-Location"])
    #expect(try TwoNodeCluster.answered(cluster.b, route: "/v1/tus", method: "PATCH", status: 204) == 1)
    #expect(try TwoNodeCluster.answered(cluster.a, route: "/v1/tus", method: "PATCH", status: 204) == 0)

    // Node A answers the finished upload with the record node B made.
    let record = try TusServer.request(port: portA, "GET", path, [TusServer.tus, TusServer.acme])
    #expect(record.status == 200 && record["Content-Location"] == attachment)
    let plain = try TusServer.request(port: portA, "POST", "/v1/attachments", [TusServer.acme], body: body)
    #expect(plain.status == 201)
    let recordJSON = try #require(record.json)
    let plainJSON = try #require(plain.json)
    #expect(TusServer.content(recordJSON) == TusServer.content(plainJSON))
    #expect(try Self.uploadObjects(cluster.backends).isEmpty)
  }

  @Test func aResumeOnTheOtherNodeTakesTheUploadOverFromARequestStillOpenOnTheFirst() throws {
    let cluster = try TwoNodeCluster(label: "stale") { $0.uploads.commitInterval = 0.5 }
    defer { cluster.stop() }
    let image = try Self.largeImage()
    let body = image.bytes
    let onA = ResumableClient(version: 6, key: Self.key, port: TwoNodeCluster.port(cluster.a))
    // The old connection stays open, silent after the cut (a dead radio link looks so to a
    // server): node A's writer holds the upload and has nothing more to commit.
    let stale = try TestConnection.live(port: onA.port, timeout: 30)
    try stale.send(onA.creation(length: body.count, contentType: "image/png"))
    let interim = try stale.readResponse()
    try stale.send(Array(body[0..<Self.cut]))
    // Long enough for node A's timer to have committed every byte that arrived.
    Thread.sleep(forTimeInterval: 2)
    let path = ResumableClient.path(of: try #require(interim["Location"]))

    let onB = ResumableClient(version: 6, key: Self.key, port: TwoNodeCluster.port(cluster.b))
    let started = ContinuousClock.now
    let connection = try TestConnection.live(port: onB.port, timeout: 30)
    try connection.send(onB.offsetRetrieval(path))
    let offset = try connection.readResponse(forHead: true)
    let waited = ContinuousClock.now - started
    #expect(offset.status == 204 && offset["Upload-Offset"] == String(Self.cut))
    // Node A let go at its next timer commit, not after the takeover wait (10 s) or the lease.
    #expect(waited < .seconds(5), "the offset took \(waited)")
    // The stale request was answered and its connection ended.
    let superseded = try stale.readFinal()
    #expect(superseded.status == 409 && superseded.json?["code"] as? String == "upload_superseded")
    try connection.send(onB.append(path, offset: Self.cut, length: body.count - Self.cut))
    try connection.send(Array(body[Self.cut...]))
    let final = try connection.readFinal()
    #expect(final.status == 201, "\(final.status) \(final.text)")
    let plain = try cluster.a.upload(file: image.path)
    #expect(ResumableInteropTests.facts(final.json) == ResumableInteropTests.facts(plain.json))
  }

  @Test(arguments: [8, 3])
  func aResumableUploadCutAndResumedThroughTheBalancerCrossesNodesIntoThePlainRecord(version: Int) throws {
    let cluster = try TwoNodeCluster(label: "balancedresumable\(version)")
    defer { cluster.stop() }
    let image = try Self.largeImage()
    let client = ResumableClient(version: version, key: Self.key, port: cluster.proxy.port)
    let resumed = try client.interruptedUpload(image.bytes, cut: Self.cut, contentType: "image/png")
    // The upload URL names the balancer, not the node that made it.
    let location = try #require(resumed.interim["Location"])
    #expect(location.hasPrefix("http://127.0.0.1:\(cluster.proxy.port)/v1/uploads/upl_"), "\(location)")
    // HAProxy resets its side to the node when the client goes, and a reset drops what the
    // node's socket still held unread: the offset is what the node had read, never past the cut.
    #expect(resumed.offset.status == 204)
    let offset = Int(resumed.offset["Upload-Offset"] ?? "") ?? -1
    #expect(offset > 0 && offset <= Self.cut, "offset \(offset)")
    #expect(resumed.final.status == 201, "\(resumed.final.status) \(resumed.final.text)")
    // The balancer spread the upload's requests (creation, offset, append) over both nodes.
    let touched = try cluster.nodes.map {
      try TwoNodeCluster.answered($0, route: "/v1/uploads")
        + TwoNodeCluster.answered($0, route: "/v1/attachments")
    }
    #expect(touched.allSatisfy { $0 > 0 }, "requests per node: \(touched)")
    let plain = try cluster.b.upload(file: image.path)
    #expect(ResumableInteropTests.facts(resumed.final.json) == ResumableInteropTests.facts(plain.json))
  }

  @Test(.enabled(if: Tuspy.installed, "skipped: tuspy not installed (Scripts/install-deps)"))
  func tuspyCutAndResumedThroughTheBalancerCrossesNodesIntoThePlainRecord() throws {
    let cluster = try TwoNodeCluster(label: "balancedtus")
    defer { cluster.stop() }
    let image = try Self.largeImage()
    let (report, record) = try TuspyTests.drive(
      port: cluster.proxy.port, file: image.path,
      ["mode": "cut", "at": Self.cut, "chunk_size": 16 << 20, "pace_ms": 10])
    #expect(report.cuts == 1)
    // tuspy resumed from what the cut PATCH's node had read and committed, never past the cut.
    let resumedAt = try #require(report.patch_offsets.dropFirst().first)
    #expect(resumedAt > 0 && resumedAt <= Self.cut, "resumed at \(resumedAt)")
    #expect(report.status == 200 && report.head_offset == String(image.bytes.count))
    // The upload URL names the address tuspy used, not a node.
    #expect(!cluster.nodes.contains { report.url.contains(":\(TwoNodeCluster.port($0))/") }, "\(report.url)")
    let touched = try cluster.nodes.map { try TwoNodeCluster.answered($0, route: "/v1/tus") }
    #expect(touched.allSatisfy { $0 > 0 }, "tus requests per node: \(touched)")
    let plain = try TusServer.request(
      port: TwoNodeCluster.port(cluster.a), "POST", "/v1/attachments", [TusServer.acme], body: image.bytes)
    let plainJSON = try #require(plain.json)
    #expect(TusServer.content(record) == TusServer.content(plainJSON))
  }

  /// What the bucket holds of an upload in flight: the parts of its multipart upload and the
  /// sizes of its tail objects.
  static func inFlight(_ backends: ScaleOutBackends, path: String) throws -> (parts: [Int], tails: [Int]) {
    let client = try S3Client(configuration: backends.s3.clientConfiguration())
    let prefix = "uploads/" + (path.split(separator: "/").last.map(String.init) ?? "") + "/"
    var parts: [Int] = []
    for pending in try client.listMultipartUploads(prefix: prefix) {
      parts += try client.listParts(pending.upload).map(\.size)
    }
    var tails: [Int] = []
    try client.forEachObject(prefix: prefix + "tail-") { tails.append($0.size) }
    return (parts, tails)
  }

  /// The keys under the uploads' prefix in the bucket.
  static func uploadObjects(_ backends: ScaleOutBackends) throws -> [String] {
    var keys: [String] = []
    try S3Client(configuration: backends.s3.clientConfiguration()).forEachObject(prefix: "uploads/") {
      keys.append($0.key)
    }
    return keys
  }
}
