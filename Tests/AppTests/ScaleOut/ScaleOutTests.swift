import Crypto
import Foundation
import Storage
import Synchronization
import TestSupport
import Testing

@testable import App

/// Two App nodes on one S3 bucket and one PostgreSQL database, as behind a load balancer: each
/// serves what the other stored (streamed from the object store, ranges included), signed links
/// work on both, and both sweeping at once remove each expired blob exactly once.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ScaleOutTests {
  /// A node of the cluster `backends` describes (same signing secret on every node).
  static func node(
    _ backends: ScaleOutBackends, configure: (inout Application.Configuration) -> Void = { _ in }
  )
    throws -> AttachmentServer
  {
    try AttachmentServer { config in
      backends.apply(&config)
      configure(&config)
    }
  }

  @Test func anyNodeServesReadsAndDeletesWhatAnotherStored() throws {
    let backends = try ScaleOutBackends.make(label: "twonodes")
    let nodeA = try Self.node(backends)
    defer { nodeA.stop() }
    let nodeB = try Self.node(backends)
    defer { nodeB.stop() }

    let uploaded = try nodeA.upload(file: try DistinctImages.file(seed: 1))
    #expect(uploaded.status == 201, "\(String(decoding: uploaded.body, as: UTF8.self))")
    let record = try #require(uploaded.json)
    let id = try #require(record["id"] as? String)
    let size = try #require(record["bytes"] as? Int)
    let sha = try #require(record["sha256"] as? String)
    #expect(try backends.blobs().map(\.hex) == [sha])

    let whole = try nodeB.image(id)
    #expect(whole.status == 200 && whole.body.count == size)
    #expect(Hex.encode(SHA256.hash(Array(whole.body))) == sha)
    #expect(whole.headers["content-length"] == String(size) && whole.headers["etag"] == "\"\(sha)\"")
    let part = try nodeB.image(id, extra: ["-H", "Range: bytes=100-4195"])
    #expect(part.status == 206 && part.headers["content-range"] == "bytes 100-4195/\(size)")
    #expect(Array(part.body) == Array(whole.body[whole.body.startIndex + 100..<whole.body.startIndex + 4196]))
    let tail = try nodeA.image(id, extra: ["-H", "Range: bytes=-10"])
    #expect(tail.status == 206 && Array(tail.body) == Array(whole.body.suffix(10)))
    let head = try nodeB.image(id, extra: ["-I"])
    #expect(head.status == 200 && head.headers["content-length"] == String(size) && head.body.isEmpty)
    let cached = try nodeB.image(id, extra: ["-H", "If-None-Match: \"\(sha)\""])
    #expect(cached.status == 304 && cached.body.isEmpty)

    // A signed link made by node A is valid on node B: the secret is the cluster's.
    let signed = try #require(record["signed_url"] as? String)
    let viaLink = try nodeB.curl(signed, [])
    #expect(viaLink.status == 200 && viaLink.body.count == size)

    #expect(
      try nodeB.curl(
        "/v1/attachments/\(id)",
        [
          "-X", "DELETE", "-H",
          AttachmentServer.bearer(
            AttachmentServer.acmeKey),
        ]
      ).status == 204)
    #expect(try nodeA.image(id).status == 404)
    #expect(
      try nodeA.curl("/v1/attachments/\(id)/meta", ["-H", AttachmentServer.bearer(AttachmentServer.acmeKey)])
        .status == 404)
    #expect(try backends.blobs().isEmpty)
    #expect(try nodeA.readyStatus() == 200 && nodeB.readyStatus() == 200)
  }

  @Test func anImageLargerThanTheStreamBufferReachesASlowReaderWhole() throws {
    let backends = try ScaleOutBackends.make(label: "slowreader")
    let node = try Self.node(backends)
    defer { node.stop() }
    let uploaded = try node.upload(
      file: try DistinctImages.file(seed: 7, width: 1600, height: 1200, noisy: true))
    let record = try #require(uploaded.json)
    let id = try #require(record["id"] as? String)
    let size = try #require(record["bytes"] as? Int)
    // Several times what a stream reads ahead: the read waits for the client, chunk by chunk.
    #expect(size > 3 * BlobStream.bufferLimit)
    let slow = try node.image(id, extra: ["--limit-rate", "2M"])
    #expect(slow.status == 200 && slow.body.count == size)
    #expect(Hex.encode(SHA256.hash(Array(slow.body))) == record["sha256"] as? String)
  }

  @Test func twoNodesSweepingAtOnceDeleteEachExpiredBlobOnceAndNothingLive() throws {
    let backends = try ScaleOutBackends.make(label: "sweeps")
    // acme's attachments live one second; beta's the default 30 days.
    let configure: (inout Application.Configuration) -> Void = {
      $0.attachments.tenantRetention = ["acme": 1]
    }
    let nodes = [
      try Self.node(backends, configure: configure), try Self.node(backends, configure: configure),
    ]
    defer { for node in nodes { node.stop() } }
    var expiring: [String] = []
    for seed in 0..<6 {
      let reply = try nodes[seed % 2].upload(file: try DistinctImages.file(seed: 100 + seed))
      expiring.append(try #require(reply.json?["id"] as? String))
    }
    // beta stores one image acme also stored (one blob, two rows) and two of its own.
    var live: [String] = []
    for seed in [100, 200, 201] {
      let reply = try nodes[seed % 2].upload(
        file: try DistinctImages.file(seed: seed), key: AttachmentServer.betaKey)
      live.append(try #require(reply.json?["id"] as? String))
    }
    #expect(try backends.blobs().count == 8)
    Thread.sleep(forTimeInterval: 2.1)

    let reports = Mutex<[AttachmentStore.SweepReport]>([])
    let failures = Mutex<[String]>([])
    let stores = nodes.map { $0.app.attachments.store }
    let group = DispatchGroup()
    for store in stores {
      group.enter()
      Thread.detachNewThread {
        do {
          let report = try store.sweep()
          reports.withLock { $0.append(report) }
        } catch {
          failures.withLock { $0.append(String(describing: error)) }
        }
        group.leave()
      }
    }
    group.wait()
    #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
    let all = reports.withLock { $0 }
    #expect(all.reduce(0) { $0 + $1.expiredAttachments } == 6)
    // Six expired rows, five blobs of their own: the shared one is beta's too.
    #expect(all.reduce(0) { $0 + $1.deletedBlobs } == 5)
    #expect(try backends.blobs().count == 3)
    for id in live {
      #expect(try nodes[0].image(id, key: AttachmentServer.betaKey).status == 200)
      #expect(try nodes[1].image(id, key: AttachmentServer.betaKey).status == 200)
    }
    for id in expiring { #expect(try nodes[1].image(id).status == 404) }
  }
}
