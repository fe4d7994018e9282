import Foundation
import Storage

#if canImport(Glibc)
  import Glibc
#endif

/// The stores one `attachd serve` process runs on, opened as `storage.backend` and
/// `index.backend` say:
///
/// | storage | index | attachments | uploads |
/// |---|---|---|---|
/// | `filesystem` | `sqlite` | `AttachmentStore.embedded` (one process owns the data directory) | `FileUploadStore` |
/// | `s3` | `postgres` | `S3BlobStore` + `PostgresIndex`, shared by every node | `S3UploadStore` |
/// | `s3` | `sqlite` | `S3BlobStore` + `SQLiteIndex` (one node, blobs in a bucket) | `FileUploadStore` |
///
/// Only the embedded index may forget running idempotency claims at start: a shared index's
/// claims belong to requests other nodes may still be running (their leases end them).
public struct StorageBackends: Sendable {
  /// Attachments: blobs and their index.
  public let attachments: AttachmentStore
  /// The durable upload engine on the same backends (resumable uploads, spooled bodies).
  public let uploads: any UploadStore
  /// What `/readyz` asks.
  public let probe: StorageProbe
  /// Whether other nodes may share these stores (S3 + PostgreSQL).
  public let isShared: Bool
  /// What the file upload store repaired at start (nothing for the S3 one).
  public var recovery = FileUploadStore.Recovery()

  /// Opens the stores `configuration` names; `node` names this process in upload leases.
  ///
  /// Throws `StorageError` (`.unavailable` when a server cannot be reached in time); no
  /// message holds a credential.
  public static func open(
    _ configuration: Application.Configuration, node: String, now: @escaping @Sendable () -> Date = { Date() }
  ) throws -> StorageBackends {
    let storage = configuration.storage
    var storeConfiguration = AttachmentStore.Configuration()
    storeConfiguration.defaultRetention = TimeInterval(configuration.attachments.retention)
    let directory = storage.dataDirectory
    let uploadConfiguration = configuration.uploads.storeConfiguration()
    switch (storage.backend, configuration.index.backend) {
    case (.filesystem, _):
      // One index for attachments and uploads: one SQLite file, one writer lock, one WAL.
      let index = try SQLiteIndex(configuration: SQLiteIndex.Configuration(path: directory + "/index.sqlite"))
      let store = try AttachmentStore.embedded(
        directory: directory, index: index, configuration: storeConfiguration, now: now)
      let uploads = try FileUploadStore(
        dataDirectory: directory, index: index, configuration: uploadConfiguration, now: now)
      return StorageBackends(
        attachments: store, uploads: uploads, probe: StorageProbe(check: store.checkWritable),
        isShared: false,
        recovery: uploads.recovery)
    case (.s3, let indexBackend):
      let blobs = try S3BlobStore(
        configuration: S3BlobStore.Configuration(client: storage.s3.clientConfiguration()))
      // Readiness gets a client of its own, quick to give up, so a probe never waits out the
      // retries an upload is allowed.
      var probeClient = storage.s3.clientConfiguration()
      probeClient.timeouts = S3Client.Timeouts(
        connect: min(2, storage.s3.connectTimeout), idle: 2,
        request: max(min(2, storage.s3.connectTimeout), 5))
      probeClient.retry = S3Client.Retry(maxAttempts: 1)
      probeClient.maxIdleConnections = 1
      let probeBlobs = try S3BlobStore(configuration: S3BlobStore.Configuration(client: probeClient))
      switch indexBackend {
      case .postgres:
        let index = try PostgresIndex(configuration: configuration.index.postgresConfiguration())
        let store = try AttachmentStore(
          blobs: blobs, index: index, configuration: storeConfiguration, now: now)
        let uploads = try S3UploadStore(
          client: blobs.client, index: index,
          settings: S3UploadStore.Settings(temporaryDirectory: directory + "/tmp-uploads", node: node),
          configuration: uploadConfiguration, now: now)
        return StorageBackends(
          attachments: store, uploads: uploads,
          probe: StorageProbe {
            try probeBlobs.checkWritable()
            try index.checkWritable(now: now())
          }, isShared: true)
      case .sqlite:
        let index = try SQLiteIndex(path: directory + "/index.sqlite")
        // This process owns the SQLite file: no request of an earlier one can still be running.
        try index.abandonAllRunningIdempotent()
        let store = try AttachmentStore(
          blobs: blobs, index: index, configuration: storeConfiguration, now: now)
        let uploads = try FileUploadStore(
          dataDirectory: directory, index: index, configuration: uploadConfiguration, now: now)
        return StorageBackends(
          attachments: store, uploads: uploads,
          probe: StorageProbe {
            try probeBlobs.checkWritable()
            try index.checkWritable(now: now())
          }, isShared: false, recovery: uploads.recovery)
      }
    }
  }

  /// This process's name among the nodes: `host:port`, stable across its restarts and unique
  /// among processes running at once (two cannot listen on one port). Port 0 (any free port)
  /// gives a random name. Dots become dashes (a lease token is `<node>.<random>`).
  public static func nodeName(port: Int) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    let named = buffer.withUnsafeMutableBufferPointer { gethostname($0.baseAddress!, $0.count - 1) } == 0
    let host =
      named
      ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"
    let suffix = port == 0 ? "any-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) : String(port)
    return (host.isEmpty ? "localhost" : host).replacingOccurrences(of: ".", with: "-") + ":" + suffix
  }
}
