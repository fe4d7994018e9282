import Foundation
import Storage
import Synchronization

/// A third `AttachmentIndex`, in memory, that shows the conformance suite is not shaped by
/// either database. Test-only: the App's tests use `SQLiteIndex`.
final class InMemoryIndex: AttachmentIndex {
  private struct Key: Hashable {
    var tenant: String
    var key: String
  }

  private struct Claim {
    var fingerprint: String
    var createdAt: Date
    var leaseEnd: Date
    var response: StoredResponse?
  }

  private struct Counter {
    var amount: UsageAmount
    var expiresAt: Date
  }

  private struct State {
    var rows: [String: AttachmentRecord] = [:]
    var retention: [String: TimeInterval] = [:]
    var claims: [Key: Claim] = [:]
    var counters: [UsageKey: Counter] = [:]
    /// Blobs pinned at least once and not collected since (refs are counted from `rows`).
    var knownBlobs: Set<BlobHash> = []
    var pins: [String: BlobPin] = [:]
    var nextPin = 0
    /// Attachment id → profile → rendition.
    var renditions: [String: [String: Rendition]] = [:]
    /// Attachment id → its video job, lease end and queueing time.
    var videoJobs: [String: (job: VideoJob, leaseEnd: Date?, created: Date)] = [:]
  }

  /// The state, shared with `sibling()`s: two "nodes" over one index.
  private final class Shared: Sendable {
    let state = Mutex(State())
  }

  private let shared: Shared

  init() { shared = Shared() }

  private init(sharing other: InMemoryIndex) { shared = other.shared }

  /// A second index over the same rows, as a second node sees a shared database.
  func sibling() -> InMemoryIndex { InMemoryIndex(sharing: self) }

  func insert(_ record: AttachmentRecord) throws {
    try shared.state.withLock { state in
      guard state.rows[record.id] == nil else { throw StorageError(.conflict, "id exists") }
      state.rows[record.id] = record
      state.knownBlobs.insert(record.blob)
    }
  }

  func attachment(tenant: String, id: String, now: Date) throws -> AttachmentRecord? {
    shared.state.withLock { state in
      state.rows[id].flatMap { $0.tenant == tenant && $0.expiresAt > now ? $0 : nil }
    }
  }

  func tenant(ofAttachment id: String, now: Date) throws -> String? {
    shared.state.withLock { state in state.rows[id].flatMap { $0.expiresAt > now ? $0.tenant : nil } }
  }

  func deleteAttachment(tenant: String, id: String) throws -> AttachmentRecord? {
    shared.state.withLock { state in
      guard let row = state.rows[id], row.tenant == tenant else { return nil }
      state.rows[id] = nil
      state.renditions[id] = nil
      state.videoJobs[id] = nil
      return row
    }
  }

  func deleteExpired(now: Date, limit: Int) throws -> [AttachmentRecord] {
    shared.state.withLock { state in
      let expired = state.rows.values.filter { $0.expiresAt <= now }.sorted { $0.expiresAt < $1.expiresAt }
        .prefix(limit)
      for row in expired {
        state.rows[row.id] = nil
        state.renditions[row.id] = nil
        state.videoJobs[row.id] = nil
      }
      return Array(expired)
    }
  }

  func referenceCount(of blob: BlobHash) throws -> Int {
    shared.state.withLock { state in
      state.rows.values.count { $0.blob == blob }
        + state.renditions.values.reduce(0) { $0 + $1.values.count { $0.blob == blob } }
    }
  }

  func insertRendition(_ rendition: Rendition, now: Date) throws -> Rendition? {
    shared.state.withLock { state in
      guard let row = state.rows[rendition.attachment], row.expiresAt > now else { return nil }
      if let existing = state.renditions[rendition.attachment]?[rendition.profile] { return existing }
      state.renditions[rendition.attachment, default: [:]][rendition.profile] = rendition
      state.knownBlobs.insert(rendition.blob)
      return rendition
    }
  }

  func renditions(ofAttachment id: String) throws -> [Rendition] {
    shared.state.withLock { state in
      (state.renditions[id] ?? [:]).values.sorted { $0.profile < $1.profile }
    }
  }

  func statistics() throws -> IndexStatistics {
    shared.state.withLock { state in
      var blobs: [BlobHash: Int] = [:]
      for row in state.rows.values { blobs[row.blob] = max(blobs[row.blob] ?? 0, row.bytes) }
      for rendition in state.renditions.values.flatMap(\.values) { blobs[rendition.blob] = rendition.bytes }
      return IndexStatistics(
        attachments: state.rows.count, attachmentBytes: state.rows.values.reduce(0) { $0 + $1.bytes },
        blobs: blobs.count, blobBytes: blobs.values.reduce(0, +), idempotencyKeys: state.claims.count)
    }
  }

  func setRetention(_ retention: TimeInterval?, tenant: String) throws {
    shared.state.withLock { $0.retention[tenant] = retention }
  }

  func retention(tenant: String) throws -> TimeInterval? {
    shared.state.withLock { $0.retention[tenant] }
  }

  func beginIdempotent(
    tenant: String, key: String, fingerprint: String, now: Date, lifetime: TimeInterval, lease: TimeInterval
  ) throws -> IdempotencyBegin {
    shared.state.withLock { state in
      let id = Key(tenant: tenant, key: key)
      if let claim = state.claims[id], now.timeIntervalSince(claim.createdAt) < lifetime,
        claim.response != nil || claim.leaseEnd > now
      {
        guard claim.fingerprint == fingerprint else { return .mismatch }
        return claim.response.map { .completed($0) } ?? .inProgress
      }
      state.claims[id] = Claim(
        fingerprint: fingerprint, createdAt: now, leaseEnd: now.addingTimeInterval(lease), response: nil)
      return .started
    }
  }

  func completeIdempotent(tenant: String, key: String, response: StoredResponse) throws {
    try shared.state.withLock { state in
      let id = Key(tenant: tenant, key: key)
      guard state.claims[id]?.response == nil, state.claims[id] != nil else {
        throw StorageError(.notFound, "no running claim")
      }
      state.claims[id]?.response = response
    }
  }

  func abandonIdempotent(tenant: String, key: String) throws {
    shared.state.withLock { state in
      let id = Key(tenant: tenant, key: key)
      if state.claims[id]?.response == nil { state.claims[id] = nil }
    }
  }

  func purgeIdempotent(createdBefore cutoff: Date) throws -> Int {
    shared.state.withLock { state in
      let before = state.claims.count
      state.claims = state.claims.filter { $0.value.createdAt > cutoff }
      return before - state.claims.count
    }
  }

  func pinBlob(_ blob: BlobHash, now: Date, lease: TimeInterval) throws -> BlobPin {
    shared.state.withLock { state in
      state.nextPin += 1
      let pin = BlobPin(id: "pin_\(state.nextPin)", blob: blob, expiresAt: now.addingTimeInterval(lease))
      state.pins[pin.id] = pin
      state.knownBlobs.insert(blob)
      return pin
    }
  }

  func unpinBlob(_ pin: BlobPin) throws {
    _ = shared.state.withLock { $0.pins.removeValue(forKey: pin.id) }
  }

  func purgeBlobPins(expiredBy now: Date) throws -> Int {
    shared.state.withLock { state in
      let before = state.pins.count
      state.pins = state.pins.filter { $0.value.expiresAt > now }
      return before - state.pins.count
    }
  }

  func unreferencedBlobs(now: Date, limit: Int) throws -> [BlobHash] {
    shared.state.withLock { state in
      Array(
        state.knownBlobs.filter { !Self.needed($0, in: state, now: now) }.sorted { $0.hex < $1.hex }.prefix(
          limit))
    }
  }

  func collectBlob(_ blob: BlobHash, now: Date, unknown: Bool, remove: (BlobHash) throws -> Bool) throws
    -> Bool
  {
    // Under the one lock, like SQLiteIndex's writer: no pin or insert between check and removal.
    try shared.state.withLock { state in
      guard unknown || state.knownBlobs.contains(blob), !Self.needed(blob, in: state, now: now) else {
        return false
      }
      let removed = try remove(blob)
      state.knownBlobs.remove(blob)
      state.pins = state.pins.filter { $0.value.blob != blob }
      return removed
    }
  }

  private static func needed(_ blob: BlobHash, in state: State, now: Date) -> Bool {
    state.rows.values.contains { $0.blob == blob }
      || state.renditions.values.contains { $0.values.contains { $0.blob == blob } }
      || state.pins.values.contains { $0.blob == blob && $0.expiresAt > now }
  }

  func checkWritable(now: Date) throws {}

  func reserveUsage(
    _ key: UsageKey, adding amount: UsageAmount, limits: UsageLimits, expiresAt: Date, now: Date
  )
    throws -> UsageReservation
  {
    shared.state.withLock { state in
      var counter = Counter(amount: .zero, expiresAt: expiresAt)
      if let existing = state.counters[key], existing.expiresAt > now { counter = existing }
      if let maxFiles = limits.maxFiles, counter.amount.files + amount.files > maxFiles {
        return .filesExceeded(counter.amount)
      }
      if let maxBytes = limits.maxBytes, counter.amount.bytes + amount.bytes > maxBytes {
        return .bytesExceeded(counter.amount)
      }
      counter.amount.files += amount.files
      counter.amount.bytes += amount.bytes
      state.counters[key] = counter
      return .reserved(counter.amount)
    }
  }

  func releaseUsage(_ key: UsageKey, amount: UsageAmount) throws {
    shared.state.withLock { state in
      guard var counter = state.counters[key] else { return }
      counter.amount.files = max(0, counter.amount.files - amount.files)
      counter.amount.bytes = max(0, counter.amount.bytes - amount.bytes)
      state.counters[key] = counter
    }
  }

  func usage(_ key: UsageKey, now: Date) throws -> UsageAmount? {
    shared.state.withLock { state in state.counters[key].flatMap { $0.expiresAt > now ? $0.amount : nil } }
  }

  func purgeUsage(expiredBefore cutoff: Date) throws -> Int {
    shared.state.withLock { state in
      let before = state.counters.count
      state.counters = state.counters.filter { $0.value.expiresAt > cutoff }
      return before - state.counters.count
    }
  }

  // MARK: - Video jobs

  func enqueueVideoJob(attachment: String, tenant: String, now: Date) throws {
    shared.state.withLock { state in
      guard state.videoJobs[attachment] == nil else { return }
      state.videoJobs[attachment] = (
        VideoJob(attachment: attachment, tenant: tenant, state: .queued), nil, now
      )
    }
  }

  func claimVideoJob(holder: String, now: Date, lease: TimeInterval) throws -> VideoJob? {
    shared.state.withLock { state in
      let claimable = state.videoJobs.values.filter { entry in
        entry.job.state == .queued || (entry.job.state == .running && (entry.leaseEnd ?? now) <= now)
      }
      guard var entry = claimable.min(by: { $0.created < $1.created }) else { return nil }
      entry.job.state = .running
      entry.job.holder = holder
      entry.job.attempts += 1
      entry.leaseEnd = now.addingTimeInterval(lease)
      state.videoJobs[entry.job.attachment] = entry
      return entry.job
    }
  }

  func renewVideoJob(attachment: String, holder: String, now: Date, lease: TimeInterval) throws -> Bool {
    shared.state.withLock { state in
      guard var entry = state.videoJobs[attachment], entry.job.state == .running, entry.job.holder == holder
      else { return false }
      entry.leaseEnd = now.addingTimeInterval(lease)
      state.videoJobs[attachment] = entry
      return true
    }
  }

  func finishVideoJob(
    attachment: String, holder: String, state finished: VideoJob.State, code: String?, releasing: String
  ) throws -> Bool {
    shared.state.withLock { state in
      guard var entry = state.videoJobs[attachment], entry.job.state == .running, entry.job.holder == holder
      else { return false }
      entry.job.state = finished
      entry.job.code = code
      entry.job.holder = nil
      entry.leaseEnd = nil
      state.videoJobs[attachment] = entry
      state.renditions[attachment]?[releasing] = nil
      return true
    }
  }

  func videoJob(attachment: String) throws -> VideoJob? {
    shared.state.withLock { $0.videoJobs[attachment]?.job }
  }

  func requeueVideoJobs(holderPrefix prefix: String) throws -> Int {
    shared.state.withLock { state in
      var count = 0
      for (id, var entry) in state.videoJobs where entry.job.state == .running {
        guard entry.job.holder?.hasPrefix(prefix) == true else { continue }
        entry.job.state = .queued
        entry.job.holder = nil
        entry.leaseEnd = nil
        state.videoJobs[id] = entry
        count += 1
      }
      return count
    }
  }
}
