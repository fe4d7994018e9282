import Foundation
import Storage
import Synchronization
import TestSupport
import Testing

/// Opens one `UploadStore` implementation; the conformance suite runs once per factory.
struct UploadStoreFactory: Sendable, CustomTestStringConvertible {
  let name: String
  /// Opens a store over the backing kept in `directory`. The first call creates it; a later call
  /// with `peer == false` is a restart of the same node, with `peer == true` a second node (or
  /// process) working on the same uploads at the same time.
  let open:
    @Sendable (
      _ directory: String, _ clock: TestClock, _ configuration: UploadStoreConfiguration, _ peer: Bool
    )
      throws -> any UploadStore
  var testDescription: String { name }

  /// Bytes in S3 (the shared SeaweedFS), state in PostgreSQL (the shared server): node "a" for
  /// a first opening and its restarts, node "b" for a peer, over one schema and key prefix per
  /// test directory.
  static let s3 = UploadStoreFactory(name: "S3UploadStore") { directory, clock, configuration, peer in
    let backing = try S3UploadBacking.forDirectory(directory)
    let node = peer ? "b" : "a"
    return try S3UploadStore(
      client: backing.client, index: PostgresIndex(url: backing.url),
      settings: S3UploadStore.Settings(
        keyPrefix: backing.keyPrefix, temporaryDirectory: directory + "/tmp-" + node, node: node),
      configuration: configuration, now: clock.closure)
  }

  // Every test of the suite passes unchanged on each.
  static let all: [UploadStoreFactory] = [
    UploadStoreFactory(name: "FileUploadStore") { directory, clock, configuration, peer in
      try FileUploadStore(
        dataDirectory: directory, index: SQLiteIndex(path: directory + "/index.sqlite"),
        configuration: configuration, exclusive: !peer, now: clock.closure)
    },
    UploadStoreFactory(name: "FileUploadStore(NORMAL)") { directory, clock, configuration, peer in
      try FileUploadStore(
        dataDirectory: directory,
        index: SQLiteIndex(configuration: .init(path: directory + "/index.sqlite", synchronous: .normal)),
        configuration: configuration, exclusive: !peer, now: clock.closure)
    },
    s3,
  ]

  /// Small buffers, so that tests cross many flush boundaries with little data.
  static let testConfiguration = UploadStoreConfiguration(
    writeBufferBytes: 4 << 10, commitBytes: 8 << 10, leaseDuration: 30, takeoverTimeout: 20,
    takeoverPollInterval: 0.01)
}

/// A new upload request with the test defaults.
func newUpload(
  tenant: String = "acme", owner: String? = nil, length: Int?, maxLength: Int = 1 << 20,
  metadata: [UInt8] = [], lifetime: TimeInterval = 86_400
) -> NewUpload {
  NewUpload(
    tenant: tenant, owner: owner, length: length, maxLength: maxLength, metadata: metadata,
    protocolName: "test",
    lifetime: lifetime)
}

extension UploadStore {
  /// Opens a writer at `offset` (nil: wherever it stands) that ignores takeovers.
  func writer(tenant: String = "acme", _ id: String, offset: Int?, length: Int? = nil) throws
    -> any UploadWriter
  {
    try openWriter(tenant: tenant, id: id, offset: offset, length: length) {}
  }

  /// Writes `bytes` through a new writer at `offset` and closes it; returns the committed state.
  @discardableResult
  func put(tenant: String = "acme", _ id: String, _ bytes: ArraySlice<UInt8>, at offset: Int?) throws
    -> UploadState
  {
    let writer = try self.writer(tenant: tenant, id, offset: offset)
    try writer.write(bytes)
    return try writer.close()
  }

  @discardableResult
  func put(tenant: String = "acme", _ id: String, _ bytes: [UInt8], at offset: Int?) throws -> UploadState {
    try put(tenant: tenant, id, bytes[...], at: offset)
  }

  /// Completes the upload and returns its bytes; fails the test unless a body came back.
  func completedBytes(tenant: String = "acme", _ id: String) throws -> [UInt8] {
    guard case .body(let body, _) = try complete(tenant: tenant, id: id) else {
      Issue.record("complete returned no body")
      return []
    }
    return body.withUnsafeBytes { Array($0) }
  }
}

extension UploadWriter {
  /// Appends `bytes` in slices of `slice`, flushing whenever the writer asks.
  func write(_ bytes: ArraySlice<UInt8>, slice: Int = 1_000) throws {
    var start = bytes.startIndex
    while start < bytes.endIndex {
      let end = min(start + slice, bytes.endIndex)
      let outcome = try bytes[start..<end].withUnsafeBytes { try append($0) }
      if outcome == .flushNeeded { try flush() }
      start = end
    }
  }

  func write(_ bytes: [UInt8], slice: Int = 1_000) throws { try write(bytes[...], slice: slice) }
}

/// Counts calls from any thread.
final class CallCounter: Sendable {
  private let value = Mutex(0)
  func increment() { value.withLock { $0 += 1 } }
  var count: Int { value.withLock { $0 } }
}

/// The PostgreSQL schema and the key prefix in the shared bucket that stand for one test
/// directory's "disk" in the S3 factory: made on first use, found again by later openings.
struct S3UploadBacking: Sendable {
  let url: String
  let client: S3Client
  let keyPrefix: String

  private static let known = Mutex<[String: S3UploadBacking]>([:])

  static func forDirectory(_ directory: String) throws -> S3UploadBacking {
    if let found = known.withLock({ $0[directory] }) { return found }
    let made = S3UploadBacking(
      url: try PostgresTestDatabase.freshURL(),
      client: try S3Client(configuration: SharedBucket.configuration("uploads")),
      keyPrefix: SharedBucket.uniquePrefix("uploads"))
    return known.withLock { known in
      if let found = known[directory] { return found }
      known[directory] = made
      return made
    }
  }
}
