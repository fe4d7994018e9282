private import Crypto
import Foundation
import Synchronization

/// Uploads whose bytes are in an S3-compatible bucket and whose state is in PostgreSQL: the
/// `UploadStore` every node of a cluster shares, so any node resumes, completes or cancels an
/// upload another node started.
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
/// **Writers.** One per upload, as in `FileUploadStore`: the lease is the row's `lease_holder`,
/// taken over in this process at once and from another node through `lease_wanted` or when it
/// lapses. Tokens start with `node`; opening the store releases the leases of that node (its
/// previous process is dead), so `node` must differ between processes running at once.
///
/// **Expiry.** `deleteExpired` deletes expired rows (`FOR UPDATE SKIP LOCKED`: sweeping nodes
/// split the work), aborts their multipart uploads and deletes their objects; every
/// `orphanSweepInterval` it also aborts multipart uploads and deletes objects under the prefix
/// that no row owns any more (a crash between an S3 call and its row), once older than
/// `orphanGrace`.
public final class S3UploadStore: UploadStore {
  /// Where in the bucket uploads go and how they are cut.
  public struct Settings: Sendable, Hashable {
    /// Put before every key: ends in `/`, and must not be (or be under) the blobs' prefix.
    public var keyPrefix: String
    /// Bytes per part (5 MiB). An upload whose maximum would need more than 9 999 parts uses
    /// larger parts (whole MiB), so the last part always has a number left.
    public var partSize: Int
    /// A local directory for the partial parts of writers and downloaded bodies (unlinked files).
    public var temporaryDirectory: String
    /// This process's name in lease tokens: stable across its restarts, unique among the
    /// processes running at once (the App uses `host:port`).
    public var node: String
    /// How old an object or multipart upload no row owns must be before it is removed (1 h).
    public var orphanGrace: TimeInterval
    /// How often `deleteExpired` looks for such leftovers (1 h).
    public var orphanSweepInterval: TimeInterval

    /// Settings with the defaults.
    public init(
      keyPrefix: String = "uploads/", partSize: Int = S3Client.minimumPartSize, temporaryDirectory: String,
      node: String, orphanGrace: TimeInterval = 3_600, orphanSweepInterval: TimeInterval = 3_600
    ) {
      self.keyPrefix = keyPrefix
      self.partSize = partSize
      self.temporaryDirectory = temporaryDirectory
      self.node = node
      self.orphanGrace = orphanGrace
      self.orphanSweepInterval = orphanSweepInterval
    }

    /// Throws `.invalidArgument` naming the first setting that cannot work.
    public func validate() throws {
      func check(_ condition: Bool, _ message: String) throws {
        if !condition { throw StorageError(.invalidArgument, "s3 uploads: \(message)") }
      }
      try check(
        keyPrefix.hasSuffix("/") && !keyPrefix.hasPrefix("/") && keyPrefix.utf8.count <= 512,
        "keyPrefix must end in / (not start with it), ≤ 512 bytes")
      try check(
        (S3Client.minimumPartSize...S3Client.maximumPartSize).contains(partSize),
        "partSize must be 5 MiB … 5 GiB")
      try check(!temporaryDirectory.isEmpty, "temporaryDirectory must be set")
      try check(
        !node.isEmpty && node.utf8.count <= 200 && !node.contains("."),
        "node must be 1-200 characters without '.'")
      try check(orphanGrace >= 0 && orphanGrace.isFinite, "orphanGrace must be 0 or more seconds")
      try check(
        orphanSweepInterval > 0 && orphanSweepInterval.isFinite, "orphanSweepInterval must be positive")
    }
  }

  /// The shared `uploads.*` settings in force.
  public let configuration: UploadStoreConfiguration
  /// Where the bytes go.
  public let settings: Settings
  /// Leases of this node's previous process released when the store was opened.
  public let releasedLeases: Int

  let client: S3Client
  let index: PostgresIndex
  let slots = UploadSlots()
  let clock: @Sendable () -> Date
  let lastOrphanSweepTime: Mutex<Date>

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
    self.configuration = configuration
    self.settings = settings
    self.client = client
    self.index = index
    self.clock = now
    self.lastOrphanSweepTime = Mutex(now())
    try FileManager.default.createDirectory(
      atPath: settings.temporaryDirectory, withIntermediateDirectories: true)
    self.releasedLeases = try index.clearUploadLeases(instance: settings.node)
  }

  /// The current time by the injected clock.
  var now: Date { clock() }

  /// This node's lease-token prefix.
  var instance: String { settings.node }

  static func isUploadID(_ id: String) -> Bool { SecureRandom.isIdentifier(id, prefix: "upl_") }

  func objectPrefix(_ id: String) -> String { settings.keyPrefix + id + "/" }
  func dataKey(_ id: String) -> String { objectPrefix(id) + "data" }
  func newTailKey(_ id: String) -> String { objectPrefix(id) + "tail-" + Hex.encode(SecureRandom.bytes(8)) }

  /// The part size of an upload that may hold `maxLength` bytes.
  func partSize(forMaximum maxLength: Int) -> Int {
    let mebibyte = 1 << 20
    let needed = (maxLength + S3Client.maximumPartCount - 2) / (S3Client.maximumPartCount - 1)
    return max(settings.partSize, (needed + mebibyte - 1) / mebibyte * mebibyte)
  }

  // MARK: - Create, read, cancel, expire

  public func create(_ upload: NewUpload) throws -> UploadState {
    let record = try UploadRecord(new: upload, configuration: configuration, now: now)
    let partSize = self.partSize(forMaximum: upload.maxLength)
    guard partSize <= S3Client.maximumPartSize else {
      throw StorageError(.invalidArgument, "upload maximum \(upload.maxLength) needs parts over 5 GiB")
    }
    var row = S3UploadRow(
      record: record, partSize: partSize, multipartUploadID: nil, partsCount: 0, partsBytes: 0, tailKey: nil,
      assembled: false)
    do {
      try index.insertUpload(row)
    } catch let error as StorageError where error.code == .conflict {
      // 128 random bits do not collide; if they ever did, a second draw settles it.
      row.record.state.id = SecureRandom.identifier(prefix: "upl_")
      try index.insertUpload(row)
    }
    return row.record.state
  }

  public func state(tenant: String, id: String) throws -> UploadState? {
    guard Self.isUploadID(id) else { return nil }
    return try index.uploadRow(id: id, tenant: tenant, now: now)?.record.state
  }

  @discardableResult
  public func cancel(tenant: String, id: String) throws -> Bool {
    guard Self.isUploadID(id) else { return false }
    var callback: (@Sendable () -> Void)?
    let current = now
    let removed = try slots.withLock(id) { holder -> (live: Bool, multipart: String?)? in
      // Cancelling another tenant's upload must not disturb its writer: look first.
      guard try index.uploadRow(id: id, tenant: tenant, now: current) != nil else { return nil }
      callback = holder.writer?.preempt(persist: false, holder: &holder)
      guard let deleted = try index.deleteUpload(id: id, tenant: tenant) else { return nil }
      return (deleted.expiresAt > current, deleted.multipartUploadID)
    }
    callback?()
    guard let removed else { return false }
    removeObjects(id, multipartUploadID: removed.multipart)
    return removed.live
  }

  public func deleteExpired(limit: Int) throws -> [String] {
    let expired = try index.deleteExpiredUploads(now: now, limit: limit)
    for (id, multipart) in expired {
      let callback = try slots.withLock(id) { holder in
        holder.writer?.preempt(persist: false, holder: &holder)
      }
      callback?()
      removeObjects(id, multipartUploadID: multipart)
    }
    if expired.count < limit { try sweepOrphansIfDue() }
    return expired.map(\.id)
  }

  /// Aborts the upload's multipart upload and deletes its objects. Best effort: what fails here
  /// belongs to no row any more, and the orphan sweep removes it later.
  func removeObjects(_ id: String, multipartUploadID: String?) {
    if let multipartUploadID {
      try? client.abortMultipartUpload(S3MultipartUpload(key: dataKey(id), uploadId: multipartUploadID))
    }
    try? client.forEachObject(prefix: objectPrefix(id)) { object in try? client.deleteObject(object.key) }
  }
}
