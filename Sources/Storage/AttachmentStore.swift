private import Crypto
import Foundation
import Synchronization

/// What the App calls: stores, finds, deletes and sweeps attachments over a blob store and an index.
///
/// Order of writes: the blob first (durable), then the index row. A crash between the two leaves
/// an unreferenced blob that `sweep` collects later; never a row without its blob. A blob a
/// `store` call is writing is pinned in the index (a lease row) until its row is committed, so
/// neither `delete` nor `sweep`, on this node or another sharing the index, can remove a
/// deduplicated blob an in-flight upload is about to refer to.
public final class AttachmentStore: Sendable {
  /// Retention, sweeping and idempotency settings.
  public struct Configuration: Sendable {
    /// How long an attachment lives when neither the call nor the tenant says otherwise (30 days).
    public var defaultRetention: TimeInterval
    /// How old an unreferenced blob must be before `sweep` deletes it (1 hour).
    public var sweepGrace: TimeInterval
    /// How long an idempotency key is remembered (24 hours).
    public var idempotencyLifetime: TimeInterval
    /// Expired rows deleted per index transaction while sweeping.
    public var sweepBatch: Int
    /// How long a running idempotency claim holds its key (10 minutes); past it, a retry runs.
    ///
    /// Generous rather than renewed: the claim is taken once the whole body has arrived, so it
    /// covers only the pipeline and the store, which the pipeline's limits keep to seconds. A
    /// claim whose node died frees its key after this long; a request that somehow outlives
    /// it loses nothing but the protection (its answer is stored unless a retry's came first).
    public var idempotencyLease: TimeInterval
    /// How long a blob pin protects the blob an upload is storing (10 minutes).
    ///
    /// Generous rather than renewed: it covers one blob write and one index insert. A pin
    /// whose node died stops delaying the blob's collection after this long.
    public var pinLease: TimeInterval

    /// The defaults.
    public init(
      defaultRetention: TimeInterval = 30 * 86_400, sweepGrace: TimeInterval = 3_600,
      idempotencyLifetime: TimeInterval = 86_400, sweepBatch: Int = 500, idempotencyLease: TimeInterval = 600,
      pinLease: TimeInterval = 600
    ) {
      self.defaultRetention = defaultRetention
      self.sweepGrace = sweepGrace
      self.idempotencyLifetime = idempotencyLifetime
      self.sweepBatch = sweepBatch
      self.idempotencyLease = idempotencyLease
      self.pinLease = pinLease
    }

    /// Throws `.invalidArgument` for settings that cannot work.
    public func validate() throws {
      guard defaultRetention > 0, sweepGrace >= 0, idempotencyLifetime > 0, sweepBatch > 0,
        idempotencyLease > 0, pinLease > 0
      else {
        throw StorageError(
          .invalidArgument, "retention, grace, idempotency lifetime, leases and batch must be positive")
      }
    }
  }

  /// What one `sweep` removed.
  public struct SweepReport: Sendable, Hashable {
    /// Expired attachment rows deleted.
    public var expiredAttachments = 0
    /// Blobs deleted because nothing referred to them any more.
    public var deletedBlobs = 0
    /// Bytes of those blobs.
    public var deletedBlobBytes = 0
    /// Idempotency keys older than their lifetime deleted.
    public var purgedIdempotencyKeys = 0
    /// Usage counters past their expiry deleted.
    public var purgedUsageCounters = 0
    /// Blob pins whose lease ended without an unpin (their upload's node died) deleted.
    public var purgedBlobPins = 0

    /// An empty report.
    public init() {}
  }

  /// The blob store underneath.
  public let blobs: any BlobStore
  /// The index underneath.
  public let index: any AttachmentIndex
  /// The settings in force.
  public let configuration: Configuration
  private let clock: @Sendable () -> Date
  /// The idempotency claims this process's requests hold, by tenant and key: when each began,
  /// and whether its release failed (a full disk), so that it is released when its key comes back.
  private let claims = Mutex<[ClaimedKey: Claim]>([:])

  private struct ClaimedKey: Hashable {
    var tenant: String
    var key: String
  }

  private struct Claim {
    var began: Date
    var releaseFailed = false
  }

  /// A store over `blobs` and `index`; `now` is the clock (injected by tests).
  ///
  /// Other nodes may share `blobs` and `index`: everything they must agree on is in the index.
  public init(
    blobs: any BlobStore, index: any AttachmentIndex, configuration: Configuration = Configuration(),
    now: @escaping @Sendable () -> Date = { Date() }
  ) throws {
    try configuration.validate()
    self.blobs = blobs
    self.index = index
    self.configuration = configuration
    self.clock = now
  }

  /// The embedded default: blobs under `directory/blobs`, index in `directory/index.sqlite`.
  ///
  /// Releases idempotency claims of an earlier process at once: the embedded index belongs to
  /// this process, so none of their requests can still be running.
  public static func embedded(
    directory: String, configuration: Configuration = Configuration(),
    synchronous: SQLiteIndex.Configuration.Synchronous = .full,
    now: @escaping @Sendable () -> Date = { Date() }
  ) throws -> AttachmentStore {
    // The index file goes inside `directory`, which may not exist yet (the blob store, made
    // after it, would create it too late).
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let index = try SQLiteIndex(
      configuration: SQLiteIndex.Configuration(path: directory + "/index.sqlite", synchronous: synchronous))
    return try embedded(directory: directory, index: index, configuration: configuration, now: now)
  }

  /// The embedded store over an index opened by the caller (who shares it, e.g. with a
  /// `FileUploadStore`: one SQLite file, one writer lock). Releases idempotency claims of an
  /// earlier process, as `embedded(directory:)` does.
  public static func embedded(
    directory: String, index: SQLiteIndex, configuration: Configuration = Configuration(),
    now: @escaping @Sendable () -> Date = { Date() }
  ) throws -> AttachmentStore {
    let blobs = try FileBlobStore(root: directory)
    try index.abandonAllRunningIdempotent()
    return try AttachmentStore(blobs: blobs, index: index, configuration: configuration, now: now)
  }

  /// The current time by the injected clock.
  public var now: Date { clock() }

  // MARK: - Attachments

  /// Stores a processed image and its record; returns the record (its `id` is new and random).
  ///
  /// `retention` overrides the tenant's and the default retention for this attachment;
  /// `owner` is the end user who uploaded it with a token (nil for a tenant key).
  ///
  /// `id`, when given, is the record's id, derived by the caller from what it is processing (a
  /// completed upload's id and the file's place in it): storing the same thing again — another
  /// node redoing the work of one that died after storing and before recording its answer —
  /// finds the record already there and returns it, so a retry never makes a second attachment.
  public func store(
    tenant: String, owner: String? = nil, bytes: UnsafeRawBufferPointer, contentType: String = "image/jpeg",
    width: Int, height: Int, source: SourceInfo, retention: TimeInterval? = nil, kind: String = "image",
    details: String? = nil, id: String? = nil
  ) throws -> AttachmentRecord {
    let lifetime = try retention ?? index.retention(tenant: tenant) ?? configuration.defaultRetention
    let hash = BlobHash.of(bytes)
    // Pinned before the put: a collection on any node either finished before the pin (and
    // the put writes the blob again) or sees the pin and leaves the blob alone.
    let pin = try index.pinBlob(hash, now: clock(), lease: configuration.pinLease)
    // An unpin that fails (index unreachable) leaves a pin that expires by itself.
    defer { try? index.unpinBlob(pin) }
    _ = try blobs.put(bytes, sha256: hash)
    // Whole seconds, so the record returned equals the one read back later.
    let created = Date(timeIntervalSince1970: clock().timeIntervalSince1970.rounded(.down))
    var record = AttachmentRecord(
      id: id ?? SecureRandom.identifier(prefix: "att_"), tenant: tenant, blob: hash, contentType: contentType,
      width: width, height: height, bytes: bytes.count, source: source, createdAt: created,
      expiresAt: created.addingTimeInterval(lifetime.rounded(.down)), owner: owner, kind: kind,
      details: details)
    do {
      try index.insert(record)
    } catch let error as StorageError where error.code == .conflict && id != nil {
      // Stored before (the same upload's file, processed again): that record is the answer.
      guard let existing = try index.attachment(tenant: tenant, id: record.id, now: clock()) else {
        throw error
      }
      return existing
    } catch let error as StorageError where error.code == .conflict {
      // 128 random bits do not collide; if they ever did, a second draw settles it.
      record.id = SecureRandom.identifier(prefix: "att_")
      try index.insert(record)
    }
    return record
  }

  /// Stores an array's bytes; see `store(tenant:owner:bytes:contentType:width:height:source:retention:)`.
  public func store(
    tenant: String, owner: String? = nil, bytes: [UInt8], contentType: String = "image/jpeg", width: Int,
    height: Int, source: SourceInfo, retention: TimeInterval? = nil, kind: String = "image",
    details: String? = nil, id: String? = nil
  ) throws -> AttachmentRecord {
    try bytes.withUnsafeBytes {
      try store(
        tenant: tenant, owner: owner, bytes: $0, contentType: contentType, width: width, height: height,
        source: source, retention: retention, kind: kind, details: details, id: id)
    }
  }

  /// The tenant's live attachment, or nil when missing, expired, another tenant's, or (for
  /// `.user`) another user's.
  public func get(tenant: String, id: String, visibleTo viewer: Viewer = .tenant) throws -> AttachmentRecord?
  {
    guard let record = try index.attachment(tenant: tenant, id: id, now: clock()) else { return nil }
    return viewer.sees(record) ? record : nil
  }

  /// The tenant of the live attachment `id`, or nil (signed links name no tenant).
  public func tenant(ofAttachment id: String) throws -> String? {
    try index.tenant(ofAttachment: id, now: clock())
  }

  /// The stored bytes of a record (or the bytes in `range`, clamped).
  public func read(_ record: AttachmentRecord, range: Range<Int>? = nil) throws -> [UInt8] {
    try blobs.read(record.blob, range: range)
  }

  /// A local file holding the record's bytes (for `sendfile`), when the blob store has one.
  public func path(for record: AttachmentRecord) -> String? { blobs.path(for: record.blob) }

  /// Deletes the tenant's attachment at once; its blob goes when no other row refers to it.
  ///
  /// Returns false when there was no live attachment of that tenant (and, for `.user`, of
  /// that user) with that id.
  @discardableResult
  public func delete(tenant: String, id: String, visibleTo viewer: Viewer = .tenant) throws -> Bool {
    let current = clock()
    // An owner never changes, so checking before deleting leaves no window to exploit.
    if case .user = viewer, try get(tenant: tenant, id: id, visibleTo: viewer) == nil { return false }
    // Read before the delete, which removes the rows: a rendition made in between is deleted
    // with the attachment all the same, and its blob is left to the sweeper.
    let renditionBlobs = (try? index.renditions(ofAttachment: id).map(\.blob)) ?? []
    guard let removed = try index.deleteAttachment(tenant: tenant, id: id) else { return false }
    // Failing to remove a blob now is harmless: the sweeper removes unreferenced blobs.
    for blob in Set([removed.blob] + renditionBlobs) { _ = try? collect(blob, unknown: false) }
    return removed.expiresAt > current
  }

  // MARK: - Sweeping

  /// Deletes expired rows, then unreferenced blobs older than the grace period, then old
  /// idempotency keys. Safe to run while uploads are in flight.
  ///
  /// Walks every blob once: run it periodically (e.g. hourly), not per request.
  public func sweep() throws -> SweepReport {
    let current = clock()
    var report = SweepReport()
    while true {
      let expired = try index.deleteExpired(now: current, limit: configuration.sweepBatch)
      report.expiredAttachments += expired.count
      for blob in Set(expired.map(\.blob)) {
        if let size = try collect(blob, unknown: false) {
          report.deletedBlobs += 1
          report.deletedBlobBytes += size
        }
      }
      if expired.count < configuration.sweepBatch { break }
    }
    // Blobs the index knows that nothing refers to or pins: an upload that failed after its
    // put, a delete whose blob removal failed, or a node that died in between. Bounded rounds:
    // a blob another node is collecting stays in the list until that node is done.
    for _ in 0..<100 {
      let unreferenced = try index.unreferencedBlobs(now: current, limit: configuration.sweepBatch)
      var collected = 0
      for hash in unreferenced {
        guard let size = try collect(hash, unknown: false) else { continue }
        collected += 1
        report.deletedBlobs += 1
        report.deletedBlobBytes += size
      }
      if unreferenced.count < configuration.sweepBatch || collected == 0 { break }
    }
    // Blobs the index does not know: a crash between blob and row before pins were rows, or
    // bytes put by hand.
    let cutoff = current.addingTimeInterval(-configuration.sweepGrace)
    // Checked during the walk, not gathered first: a large store must not cost a large array.
    try blobs.forEachBlob { info in
      guard info.modified < cutoff, let size = try collect(info.hash, unknown: true) else { return }
      report.deletedBlobs += 1
      report.deletedBlobBytes += size
    }
    report.purgedIdempotencyKeys = try index.purgeIdempotent(
      createdBefore: current.addingTimeInterval(-configuration.idempotencyLifetime))
    report.purgedUsageCounters = try index.purgeUsage(expiredBefore: current)
    report.purgedBlobPins = try index.purgeBlobPins(expiredBy: current)
    return report
  }

  // MARK: - Usage counters

  /// Adds to a usage counter within `limits` (see `AttachmentIndex.reserveUsage`).
  public func reserveUsage(_ key: UsageKey, adding amount: UsageAmount, limits: UsageLimits, expiresAt: Date)
    throws -> UsageReservation
  {
    try index.reserveUsage(key, adding: amount, limits: limits, expiresAt: expiresAt, now: clock())
  }

  /// Takes back part of a reservation (files that were not stored after all).
  public func releaseUsage(_ key: UsageKey, amount: UsageAmount) throws {
    try index.releaseUsage(key, amount: amount)
  }

  /// The live counter, or nil.
  public func usage(_ key: UsageKey) throws -> UsageAmount? { try index.usage(key, now: clock()) }

  // MARK: - Idempotency

  /// Claims `key` for this tenant's request (see `AttachmentIndex.beginIdempotent`).
  ///
  /// A claim of this process whose release failed is released first: its request is over, and
  /// within the lease it began with no other request can have taken the key (past it the index
  /// lets the retry run anyway), so the retry need not wait the lease out.
  public func beginIdempotent(tenant: String, key: String, fingerprint: String) throws -> IdempotencyBegin {
    let now = clock()
    let claimed = ClaimedKey(tenant: tenant, key: key)
    if let stale = claims.withLock({ $0[claimed] }), stale.releaseFailed {
      if now.timeIntervalSince(stale.began) < configuration.idempotencyLease {
        try abandonIdempotent(tenant: tenant, key: key)
      } else {
        claims.withLock { $0[claimed] = nil }
      }
    }
    let begun = try index.beginIdempotent(
      tenant: tenant, key: key, fingerprint: fingerprint, now: now,
      lifetime: configuration.idempotencyLifetime, lease: configuration.idempotencyLease)
    if begun == .started { claims.withLock { $0[claimed] = Claim(began: now) } }
    return begun
  }

  /// Stores the answer for a claimed key.
  public func completeIdempotent(tenant: String, key: String, response: StoredResponse) throws {
    try index.completeIdempotent(tenant: tenant, key: key, response: response)
    claims.withLock { $0[ClaimedKey(tenant: tenant, key: key)] = nil }
  }

  /// Releases a claimed key whose request failed, so that a retry can run. When the release
  /// itself fails (a full disk), the next `beginIdempotent` of the key tries again.
  public func abandonIdempotent(tenant: String, key: String) throws {
    let claimed = ClaimedKey(tenant: tenant, key: key)
    do {
      try index.abandonIdempotent(tenant: tenant, key: key)
      claims.withLock { $0[claimed] = nil }
    } catch {
      let now = clock()
      let lease = configuration.idempotencyLease
      claims.withLock { claims in
        claims[claimed]?.releaseFailed = true
        // Failed releases whose key never came back: past their lease the index frees them.
        claims = claims.filter { !$0.value.releaseFailed || now.timeIntervalSince($0.value.began) < lease }
      }
      throw error
    }
  }

  // MARK: - Tenants, health, metrics

  /// Sets (or with nil, clears) a tenant's retention override, in seconds.
  public func setRetention(_ retention: TimeInterval?, tenant: String) throws {
    try index.setRetention(retention, tenant: tenant)
  }

  /// Throws the reason when a blob or an index row could not be written now.
  public func checkWritable() throws {
    try blobs.checkWritable()
    try index.checkWritable(now: clock())
  }

  /// True when both blobs and index accept writes (for `/readyz`).
  public func isWritable() -> Bool { (try? checkWritable()) != nil }

  /// Counts for `/metrics`.
  public func statistics() throws -> IndexStatistics { try index.statistics() }

  // MARK: - Collection

  /// Deletes the blob when no row refers to it and no pin holds it; returns its size when deleted.
  ///
  /// The index holds the blob while `remove` runs, so no `store` on any node can pin (and
  /// reuse) it between the check and the deletion; a `store` that pins afterwards finds it
  /// gone and writes it again.
  func collect(_ hash: BlobHash, unknown: Bool) throws -> Int? {
    var size = 0
    let removed = try index.collectBlob(hash, now: clock(), unknown: unknown) { hash in
      size = (try? blobs.size(of: hash)) ?? 0
      return try blobs.delete(hash)
    }
    return removed ? size : nil
  }
}

/// Whose attachments a caller sees within its tenant.
public enum Viewer: Sendable, Hashable {
  /// A tenant API key: every attachment of the tenant.
  case tenant
  /// An end user's token: only the attachments that user uploaded.
  case user(String)

  /// Whether this viewer may see `record` (of its tenant).
  public func sees(_ record: AttachmentRecord) -> Bool {
    switch self {
    case .tenant: true
    case .user(let user): record.owner == user
    }
  }
}
