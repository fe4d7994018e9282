import Foundation

/// Uploads whose bytes are in an S3-compatible bucket and whose state is in PostgreSQL: the
/// `UploadStore` every node of a cluster shares, so any node resumes, completes or cancels an
/// upload another node started. A `LeasedUploadStore` over `PostgresIndex` and `S3UploadBytes`.
///
/// **Bytes.** Objects live under `<keyPrefix><id>/`. Every full part (`partSize`, at least
/// 5 MiB) goes up as a part of one multipart upload of `<id>/data`; the committed bytes past the
/// last part — less than a part — are a *tail object* `<id>/tail-<random>`, written anew at each
/// commit under a new name (as tusd's s3store keeps its `.part` object), so the committed offset
/// is always durable and readable by every node. A writer spools its partial part to an
/// unlinked local temporary file, never to memory: an upload costs the writer's buffer in RAM
/// whatever its size. Completion uploads the tail as the last part, completes the multipart
/// upload, downloads the object to a temporary file and maps it (an upload with no full part is
/// its tail object alone: nothing is assembled).
///
/// **State.** The `uploads` row (schema version 3 of `PostgresIndex`) holds what the SQLite
/// row holds — offset, length, status, result, writer lease — plus the multipart upload id, the
/// committed parts (and their ETags in `upload_parts`) and the tail object's key. An offset
/// commit is a tail PUT followed by one conditional statement: the index never names bytes that
/// are not in the bucket.
///
/// **Writers.** One per upload, as in every `LeasedUploadStore`: the lease is the row's
/// `lease_holder`, taken over in this process at once and from another node through
/// `lease_wanted` or when it lapses. Tokens start with `node`; opening the store releases the leases of that node (its
/// previous process is dead), so `node` must differ between processes running at once.
///
/// **Expiry.** `deleteExpired` deletes expired rows (`FOR UPDATE SKIP LOCKED`: sweeping nodes
/// split the work), aborts their multipart uploads and deletes their objects; every
/// `orphanSweepInterval` it also aborts multipart uploads and deletes objects under the prefix
/// that no row owns any more (a crash between an S3 call and its row), once older than
/// `orphanGrace`.
public final class S3UploadStore: ComposedUploadStore {
  /// What one orphan sweep removed.
  public struct OrphanReport: Sendable, Hashable {
    /// Multipart uploads aborted.
    public var abortedMultipartUploads = 0
    /// Objects deleted.
    public var deletedObjects = 0
  }

  /// The shared `uploads.*` settings in force.
  public var configuration: UploadStoreConfiguration { leased.configuration }
  /// Where the bytes go.
  public var settings: Settings { leased.bytes.settings }
  /// Leases of this node's previous process released when the store was opened.
  public let releasedLeases: Int

  let leased: LeasedUploadStore<PostgresIndex, S3UploadBytes>

  /// A store over `client`'s bucket and `index`'s database (migrated by the index).
  ///
  /// Releases the leases this node's previous process held, so its uploads resume at once.
  public init(
    client: S3Client, index: PostgresIndex, settings: Settings,
    configuration: UploadStoreConfiguration = .init(),
    now: @escaping @Sendable () -> Date = { Date() }
  ) throws {
    try configuration.validate()
    try settings.validate()
    let bytes = try S3UploadBytes(client: client, index: index, settings: settings, now: now)
    self.releasedLeases = try index.clearUploadLeases(instance: settings.node)
    // From now on, other nodes can see this one alive (and, once it is gone, take its uploads).
    index.holdLiveness(node: settings.node)
    self.leased = LeasedUploadStore(
      rows: index, bytes: bytes, configuration: configuration, instance: settings.node, clock: now)
  }

  /// Aborts the multipart uploads and deletes the objects under the key prefix that no upload
  /// row owns, once older than `orphanGrace` (see `S3UploadBytes.sweepOrphans`).
  @discardableResult
  public func sweepOrphans() throws -> OrphanReport { try leased.bytes.sweepOrphans() }

  var client: S3Client { leased.bytes.client }
  var index: PostgresIndex { leased.rows }
  func objectPrefix(_ id: String) -> String { leased.bytes.objectPrefix(id) }
  func dataKey(_ id: String) -> String { leased.bytes.dataKey(id) }
}
