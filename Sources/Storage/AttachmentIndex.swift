private import Crypto
import Foundation

/// The index of attachments, blobs, tenants, idempotency keys and usage counters (`SQLiteIndex`
/// embedded in one process, `PostgresIndex` shared by many nodes).
///
/// Every method may be called from many threads, and with `PostgresIndex` from many nodes, at
/// once; each is atomic. Errors are `StorageError`. Lookups take `tenant` so that another
/// tenant's id is indistinguishable from a missing one, and `now` so that an expired row is
/// invisible even before it is swept. Whatever two nodes could disagree about is a lease with
/// an expiry (running idempotency claims, blob pins), never state held in one process's memory;
/// the nodes' clocks must agree to well within the shortest lease.
public protocol AttachmentIndex: VideoJobIndex, Sendable {
  /// Adds a row; throws `.conflict` when the id exists.
  func insert(_ record: AttachmentRecord) throws

  /// The tenant's unexpired attachment with this id, or nil (also for another tenant's id).
  func attachment(tenant: String, id: String, now: Date) throws -> AttachmentRecord?

  /// The tenant owning the unexpired attachment `id`, or nil (for signed links, which carry no key).
  func tenant(ofAttachment id: String, now: Date) throws -> String?

  /// Deletes the tenant's attachment and its renditions, dropping their blob references in the
  /// same transaction; returns the removed row, or nil when there was none.
  func deleteAttachment(tenant: String, id: String) throws -> AttachmentRecord?

  /// Deletes up to `limit` rows that expired at or before `now`, with their renditions and
  /// blob references; returns the attachment rows.
  func deleteExpired(now: Date, limit: Int) throws -> [AttachmentRecord]

  /// Adds a rendition of the attachment `rendition.attachment`, and one reference to its blob,
  /// unless the attachment already has one for that profile. Returns the rendition now stored
  /// (the earlier one when two were made at once: its blob gains no reference), or nil when the
  /// attachment is gone or expired at `now` (nothing is added).
  ///
  /// Atomic against `deleteAttachment` and `deleteExpired` on any node: a rendition is never
  /// left behind by its attachment.
  func insertRendition(_ rendition: Rendition, now: Date) throws -> Rendition?

  /// The renditions stored for the attachment `id` (any order), empty when there are none.
  func renditions(ofAttachment id: String) throws -> [Rendition]

  /// How many rows (attachments, expired or not, and renditions) refer to the blob.
  func referenceCount(of blob: BlobHash) throws -> Int

  /// Pins `blob` until `now + lease` or `unpinBlob`: until then no node's `collectBlob` removes it.
  ///
  /// An upload pins its blob before writing it and unpins after its row is in, so a sweep on
  /// any node cannot delete a deduplicated blob the upload is about to refer to. When another
  /// node is collecting the blob right now, this waits until it has finished; the caller then
  /// writes the blob again. A pin whose lease passed (its node died) protects nothing.
  func pinBlob(_ blob: BlobHash, now: Date, lease: TimeInterval) throws -> BlobPin

  /// Removes a pin (nothing happens when it is already gone).
  func unpinBlob(_ pin: BlobPin) throws

  /// Deletes pins whose lease ended at or before `now`; returns how many.
  func purgeBlobPins(expiredBy now: Date) throws -> Int

  /// Up to `limit` blobs the index knows that no row refers to and no live pin holds.
  func unreferencedBlobs(now: Date, limit: Int) throws -> [BlobHash]

  /// Collects `blob` if no row refers to it and no live pin holds it: calls `remove` (which
  /// deletes the stored bytes) while holding the blob, so that no pin or insert on any node
  /// comes between the check and the removal, then forgets the blob.
  ///
  /// `unknown`: whether a blob the index has no entry for is collected too (bytes a sweep
  /// found in the blob store after a crash). Pass false after releasing a blob's last
  /// reference: a blob that another node has collected since is then left alone, not removed
  /// (and counted) twice.
  ///
  /// Returns what `remove` returned (false: the bytes were already gone), or false without
  /// calling it when the blob is still needed, unknown, or being collected by another node.
  func collectBlob(_ blob: BlobHash, now: Date, unknown: Bool, remove: (BlobHash) throws -> Bool) throws
    -> Bool

  /// Counts for metrics.
  func statistics() throws -> IndexStatistics

  /// Sets (or with nil, clears) a tenant's retention override in seconds.
  func setRetention(_ retention: TimeInterval?, tenant: String) throws

  /// The tenant's retention override in seconds, or nil when it uses the default.
  func retention(tenant: String) throws -> TimeInterval?

  /// Atomically claims an idempotency key, or reports the claim or answer already there.
  ///
  /// A key older than `lifetime` counts as absent and is claimed afresh. A running claim is a
  /// lease of `lease` seconds: once it has passed without an answer (the request died with its
  /// node), the claim counts as abandoned and the key is claimed afresh.
  func beginIdempotent(
    tenant: String, key: String, fingerprint: String, now: Date, lifetime: TimeInterval, lease: TimeInterval
  ) throws -> IdempotencyBegin

  /// Stores the answer of a claimed key; later `beginIdempotent` calls return it.
  func completeIdempotent(tenant: String, key: String, response: StoredResponse) throws

  /// Releases a claim whose request failed without an answer worth repeating.
  func abandonIdempotent(tenant: String, key: String) throws

  /// Deletes idempotency keys created at or before `cutoff`; returns how many.
  func purgeIdempotent(createdBefore cutoff: Date) throws -> Int

  /// Throws unless a write can be committed now (for readiness checks).
  func checkWritable(now: Date) throws

  /// Atomically adds `amount` to the counter `key` if the total stays within `limits`, else
  /// adds nothing and says which bound it would pass (files are checked first).
  ///
  /// A counter that does not exist, or expired at or before `now`, starts from zero and takes
  /// `expiresAt`; a live one keeps its expiry. Two concurrent calls can never both pass a bound.
  func reserveUsage(
    _ key: UsageKey, adding amount: UsageAmount, limits: UsageLimits, expiresAt: Date, now: Date
  )
    throws -> UsageReservation

  /// Takes back (part of) an earlier reservation, never below zero; nothing when the counter
  /// is gone.
  func releaseUsage(_ key: UsageKey, amount: UsageAmount) throws

  /// The live counter `key` at `now`, or nil when it does not exist or has expired.
  func usage(_ key: UsageKey, now: Date) throws -> UsageAmount?

  /// Deletes counters that expired at or before `cutoff`; returns how many.
  func purgeUsage(expiredBefore cutoff: Date) throws -> Int
}

/// One stored attachment, as the API's JSON record describes it.
public struct AttachmentRecord: Sendable, Hashable {
  /// Random public id, e.g. `att_…`; unrelated to the content.
  public var id: String
  /// The owning tenant.
  public var tenant: String
  /// The stored bytes' content address (also the `sha256` field and a strong ETag).
  public var blob: BlobHash
  /// The stored bytes' media type (`image/jpeg`).
  public var contentType: String
  /// Stored image width in pixels.
  public var width: Int
  /// Stored image height in pixels.
  public var height: Int
  /// Stored size in bytes.
  public var bytes: Int
  /// What the client sent.
  public var source: SourceInfo
  /// When it was stored (whole seconds).
  public var createdAt: Date
  /// When it stops being served and becomes eligible for sweeping (whole seconds).
  public var expiresAt: Date
  /// The end user who uploaded it with a token (the token's `sub`); nil when uploaded with
  /// a tenant API key.
  public var owner: String?
  /// What was uploaded: `image`, or `video` (whose stored blob is its poster frame).
  public var kind: String
  /// The kind's own facts as one JSON object the App writes and reads (a video's duration,
  /// size, frame times…); nil for an image. Storage keeps it as text and never parses it.
  public var details: String?

  /// A record with every field given.
  public init(
    id: String, tenant: String, blob: BlobHash, contentType: String, width: Int, height: Int, bytes: Int,
    source: SourceInfo, createdAt: Date, expiresAt: Date, owner: String? = nil, kind: String = "image",
    details: String? = nil
  ) {
    self.owner = owner
    self.kind = kind
    self.details = details
    self.id = id
    self.tenant = tenant
    self.blob = blob
    self.contentType = contentType
    self.width = width
    self.height = height
    self.bytes = bytes
    self.source = source
    self.createdAt = createdAt
    self.expiresAt = expiresAt
  }
}

/// What the uploaded original was (the record's `source` object).
public struct SourceInfo: Sendable, Hashable {
  /// Sniffed format: `jpeg`, `heic`, `png`, …
  public var format: String
  /// Original width in pixels (before orientation).
  public var width: Int
  /// Original height in pixels (before orientation).
  public var height: Int
  /// Original size in bytes.
  public var bytes: Int
  /// Applied orientation 1…8.
  public var orientation: Int
  /// Where the orientation came from (`exif`, `heif-transform`, …), when known.
  public var orientationSource: String?
  /// Name of the colour profile converted from (`Display P3`, …), when there was one.
  public var colourProfile: String?

  /// A source description.
  public init(
    format: String, width: Int, height: Int, bytes: Int, orientation: Int = 1,
    orientationSource: String? = nil, colourProfile: String? = nil
  ) {
    self.format = format
    self.width = width
    self.height = height
    self.bytes = bytes
    self.orientation = orientation
    self.orientationSource = orientationSource
    self.colourProfile = colourProfile
  }
}

/// A lease on a blob (see `AttachmentIndex.pinBlob`).
public struct BlobPin: Sendable, Hashable {
  /// Random id of this pin; other uploads of the same blob hold pins of their own.
  public var id: String
  /// The pinned blob.
  public var blob: BlobHash
  /// When the pin stops protecting the blob (whole seconds).
  public var expiresAt: Date

  /// A pin with every field given.
  public init(id: String, blob: BlobHash, expiresAt: Date) {
    self.id = id
    self.blob = blob
    self.expiresAt = expiresAt
  }
}

extension BlobPin {
  /// A new pin of `blob`, with a fresh random id, until `end` (whole seconds since 1970).
  init(blob: BlobHash, until end: Int64) {
    self.init(
      id: SecureRandom.identifier(prefix: "pin_"), blob: blob,
      expiresAt: Date(timeIntervalSince1970: TimeInterval(end)))
  }
}

/// The outcome of claiming an idempotency key.
public enum IdempotencyBegin: Sendable, Hashable {
  /// The key was free and is now claimed by this request: process it, then complete or abandon.
  case started
  /// Another request with this key is still running, within its lease (HTTP 409).
  case inProgress
  /// The first request finished; repeat its answer.
  case completed(StoredResponse)
  /// The key was used with a different request (another fingerprint; HTTP 422).
  case mismatch
}

/// The answer remembered for an idempotency key.
public struct StoredResponse: Sendable, Hashable {
  /// HTTP status.
  public var status: Int
  /// Response headers worth repeating (e.g. `Content-Type`, `Location`).
  public var headers: [String: String]
  /// Response body.
  public var body: [UInt8]

  /// A stored answer.
  public init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
    self.status = status
    self.headers = headers
    self.body = body
  }
}

/// Counts for `/metrics`.
public struct IndexStatistics: Sendable, Hashable {
  /// Attachment rows (including expired ones not yet swept).
  public var attachments: Int
  /// Sum of the rows' sizes (a shared blob counts once per row).
  public var attachmentBytes: Int
  /// Distinct blobs referred to.
  public var blobs: Int
  /// Bytes of distinct blobs referred to (what the disk holds, less unreferenced blobs).
  public var blobBytes: Int
  /// Idempotency keys held.
  public var idempotencyKeys: Int

  /// Statistics with every field given.
  public init(attachments: Int, attachmentBytes: Int, blobs: Int, blobBytes: Int, idempotencyKeys: Int) {
    self.attachments = attachments
    self.attachmentBytes = attachmentBytes
    self.blobs = blobs
    self.blobBytes = blobBytes
    self.idempotencyKeys = idempotencyKeys
  }
}
