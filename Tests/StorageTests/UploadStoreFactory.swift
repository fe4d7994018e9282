import Foundation
import Storage
import Synchronization
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

  // Add the S3 + PostgreSQL store here when it exists: every test below must pass unchanged.
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
