import Foundation
import Storage
import TestSupport
import Testing

/// The object store going away and coming back, with a SeaweedFS of this suite's own: every
/// operation fails as `.unavailable` within the configured bounds, and the same `S3BlobStore`
/// works again once the server is back, with nothing re-created.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct S3FaultTests {
  static let timeouts = S3Client.Timeouts(connect: 1, idle: 1, request: 3)
  static let retry = S3Client.Retry(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)

  /// Runs every blob operation and checks each fails as unavailable within the worst case.
  static func expectEveryOperationUnavailable(_ store: S3BlobStore, kept: BlobHash, _ context: String) {
    let bound = store.configuration.client.worstCaseDuration
    let operations: [(String, () throws -> Void)] = [
      ("put", { _ = try store.put(sampleBytes(1_000, seed: 52)) }),
      ("exists", { _ = try store.exists(kept) }),
      ("size", { _ = try store.size(of: kept) }),
      ("read", { _ = try store.read(kept) }),
      ("stream", { try store.read(kept) { _ in } }),
      ("delete", { _ = try store.delete(BlobHash.of(sampleBytes(3, seed: 53))) }),
      ("list", { try store.forEachBlob { _ in } }),
      ("writable", { try store.checkWritable() }),
    ]
    for (name, operation) in operations {
      let started = Date()
      let error = #expect(throws: StorageError.self, "\(context) \(name)") { try operation() }
      let elapsed = Date().timeIntervalSince(started)
      #expect(error?.code == .unavailable, "\(context) \(name): \(String(describing: error))")
      #expect(elapsed <= bound, "\(context) \(name) took \(elapsed) s, bound \(bound) s")
    }
  }

  @Test func aStoppedServerIsUnavailableAndTheSameStoreWorksOnceItIsBack() throws {
    let server = try SeaweedFS.start()
    defer { server.stop() }
    let client = try server.makeBucket("faults")
    let store = try S3BlobStore(
      configuration: S3BlobStore.Configuration(
        client: server.clientConfiguration(
          bucket: client.configuration.bucket, timeouts: Self.timeouts, retry: Self.retry)))
    let bytes = sampleBytes(300_000, seed: 51)
    let kept = try store.put(bytes)

    server.stop()
    Self.expectEveryOperationUnavailable(store, kept: kept, "stopped")

    try server.restart()
    #expect(try store.read(kept) == bytes, "\(server.log)")
    let added = try store.put(sampleBytes(2_000, seed: 54))
    #expect(try store.exists(added))
    var listed: Set<BlobHash> = []
    try store.forEachBlob { listed.insert($0.hash) }
    #expect(listed == [kept, added])
  }

  @Test func aFrozenServerTimesOutAsUnavailableAndRecoversWhenItRuns() throws {
    let server = try SeaweedFS.start()
    defer {
      server.resume()
      server.stop()
    }
    let client = try server.makeBucket("frozen")
    let store = try S3BlobStore(
      configuration: S3BlobStore.Configuration(
        client: server.clientConfiguration(
          bucket: client.configuration.bucket, timeouts: Self.timeouts, retry: Self.retry)))
    let bytes = sampleBytes(100_000, seed: 55)
    let kept = try store.put(bytes)

    // Connections are still accepted by the kernel; nothing answers: only timeouts can tell.
    server.pause()
    let started = Date()
    let error = #expect(throws: StorageError.self) { try store.read(kept) }
    let elapsed = Date().timeIntervalSince(started)
    #expect(error?.code == .unavailable)
    #expect(elapsed >= 1.9 && elapsed <= store.configuration.client.worstCaseDuration, "\(elapsed) s")
    let putError = #expect(throws: StorageError.self) { try store.put(sampleBytes(1_000, seed: 56)) }
    #expect(putError?.code == .unavailable)

    server.resume()
    #expect(try store.read(kept) == bytes)
    #expect(try store.exists(store.put(sampleBytes(1_000, seed: 56))))
  }
}
