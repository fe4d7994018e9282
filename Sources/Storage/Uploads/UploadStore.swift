import Foundation

/// The durable upload engine under resumable uploads (IETF draft, tus) and spooled plain bodies.
///
/// An upload is created, takes bytes at its offset through one writer at a time, is completed
/// (offset == length), processed once, and its result recorded; it expires after its lifetime.
/// Errors are `StorageError`; the upload-level ones (`offsetMismatch`, `lengthExceeded`,
/// `uploadIncomplete`, `preempted`) carry the acknowledged offset in `offset`.
///
/// **Tenancy.** Every call names the tenant; another tenant's id, a malformed id and an expired
/// upload all look exactly like a missing one (nil, or `.notFound`). The store does not compare
/// owners: an adapter that serves end users checks `UploadState.owner` itself.
///
/// **Threads.** Every method of the store, and `UploadWriter.flush` and `close`, may block (file
/// writes, fsync, the index, waiting for a pre-empted writer's last flush): call them off the
/// event loop, on the worker pool. Any thread may call any of them at any time. Only
/// `UploadWriter.append` is meant for the event loop: it copies into a bounded buffer and never
/// waits for I/O.
///
/// **One writer per upload.** `openWriter` takes the upload's lease (a holder token with an expiry
/// in the index). A request that finds the lease held takes it over: the holder is stopped, the
/// bytes it had received are made durable, its `onPreempted` is called, and then the new writer
/// is served. `setLength`, `complete` and `cancel` pre-empt the same way, so every new request
/// sees a settled offset. The lease spans processes: a holder elsewhere is asked to release it
/// through the index, or loses it when it expires.
///
/// **Durability.** An offset is acknowledged (returned by `flush`, `close`, `state`) only after
/// the bytes below it are on disk; after a crash the offset is at most what was sent and every
/// byte below it is there. Nothing past the acknowledged offset is ever visible.
public protocol UploadStore: Sendable {
  /// Creates an upload and returns its state (offset 0, a new random id).
  ///
  /// Throws `.invalidArgument` for an empty tenant, a length above `maxLength`, a non-positive
  /// maximum or lifetime, or metadata over the configured size.
  func create(_ upload: NewUpload) throws -> UploadState

  /// The upload's committed state, or nil (missing, expired, malformed id, another tenant's).
  ///
  /// Does not disturb a writer in flight, so bytes it still buffers are not counted; use
  /// `settledState` when the answer must include them (offset retrieval before a resume).
  func state(tenant: String, id: String) throws -> UploadState?

  /// The state once every byte a writer in flight had received is committed, or nil.
  ///
  /// Pre-empts that writer, as any new request on the upload does: use it for offset retrieval
  /// (`HEAD`) before a client resumes, so the offset it is told is the one its append must name.
  /// When a holder on another node does not let go within the takeover wait, this answers the
  /// committed state instead of failing. (A default implementation opens and closes a writer.)
  func settledState(tenant: String, id: String) throws -> UploadState?

  /// Takes the upload's single writer slot, pre-empting any writer in flight, and returns a
  /// writer whose appends start at `offset` (nil: wherever the settled upload stands).
  ///
  /// `length`, when given, declares the total length in the same step (see `setLength`).
  /// `onPreempted` is called at most once, when a later request takes the upload over: by the
  /// pre-empting request's thread once this writer's buffered bytes are durable, or by this
  /// writer's own `flush` or `close` when it learns from the index that a request on another
  /// node wants the upload (or took it after the lease lapsed; then the bytes buffered since the
  /// last flush are dropped and `flush` throws `.preempted`). It must return quickly and must not
  /// call the store or the writer synchronously: schedule the connection's stop, and `close`
  /// the writer, elsewhere.
  ///
  /// Throws `.notFound`; `.uploadCompleted`; `.offsetMismatch` (with the current offset) when
  /// `offset` is not the settled offset; `.lengthMismatch` / `.lengthExceeded` for a bad `length`;
  /// `.inProgress` when a holder in another process neither released nor let its lease expire
  /// within the takeover wait.
  func openWriter(
    tenant: String, id: String, offset: Int?, length: Int?, onPreempted: @escaping @Sendable () -> Void
  ) throws -> any UploadWriter

  /// Declares the total length of a deferred-length upload (pre-empting a writer in flight).
  ///
  /// Declaring the length already declared is a no-op. Throws `.lengthMismatch` when another
  /// length was declared or `length` is below the offset, `.lengthExceeded` above the maximum,
  /// `.uploadCompleted` once complete, `.notFound`.
  @discardableResult
  func setLength(tenant: String, id: String, length: Int) throws -> UploadState

  /// Marks the upload complete and claims its processing (pre-empting a writer in flight).
  ///
  /// A deferred length becomes the offset. A completed upload whose claim is free (its
  /// processor died or abandoned it) is claimed again; a processed one returns its result.
  /// Throws `.uploadIncomplete` (with the offset) when bytes are missing, `.inProgress` while
  /// another request holds the processing claim, `.notFound`.
  func complete(tenant: String, id: String) throws -> UploadCompletion

  /// Records the result of processing and releases the claim; the spooled bytes may then go.
  ///
  /// The first result recorded wins: a later call returns the state with the first one.
  @discardableResult
  func recordResult(tenant: String, id: String, result: UploadResult) throws -> UploadState

  /// Releases a processing claim without a result, so a retried `complete` processes again.
  func abandonProcessing(tenant: String, id: String) throws

  /// Deletes the upload and its bytes (pre-empting a writer in flight); false when there was none.
  @discardableResult
  func cancel(tenant: String, id: String) throws -> Bool

  /// Deletes up to `limit` uploads whose expiry has passed, with their bytes; returns their ids.
  ///
  /// Call until it returns fewer than `limit` (see `deleteAllExpired`).
  func deleteExpired(limit: Int) throws -> [String]
}

/// Takes one request's bytes into an upload: buffers slices on the event loop, writes and
/// commits off it.
///
/// Threading contract, for one request's connection:
/// - `append` runs on the event loop, one call at a time, and never blocks: it copies the slice
///   into the writer's buffer (at most the configured buffer size plus one slice).
/// - When `append` returns `.flushNeeded`, the connection pauses reading and runs `flush` off
///   the loop; reading resumes when `flush` returns. `flush` writes the buffer out (so memory
///   stays bounded) and commits once enough bytes are waiting (`commitBytes`). Appending while
///   a flush runs is refused (`.invalidArgument`): the buffer is bounded because of that pause.
/// - `commit` makes everything received so far durable and acknowledged at once; an adapter may
///   call it on a timer so a slow upload's offset advances (it also renews the lease and notices
///   a request on another node waiting for the upload).
/// - At the end of the body, or when the client goes away, call `close` off the loop: it commits
///   what was received (a dropped connection keeps every byte that arrived) and releases the lease.
/// - A writer taken over by a newer request stops: `append`, `flush` and `commit` throw
///   `.preempted`, and `close` returns the state its bytes were committed at.
public protocol UploadWriter: AnyObject, Sendable {
  /// The upload as it stood when this writer took it (appends start at its offset).
  var upload: UploadState { get }

  /// True once a newer request took the upload over (or the writer was stopped by a cancel).
  var isPreempted: Bool { get }

  /// Bytes acknowledged: durable, and the upload's offset in the store.
  var committedOffset: Int { get }

  /// The offset the next appended byte lands at: committed plus written out plus buffered.
  var receivedOffset: Int { get }

  /// Buffers a slice. Loop-safe; never blocks on I/O.
  ///
  /// Throws `.lengthExceeded` (the slice is refused whole) when it would pass the upload's
  /// length or maximum, `.preempted` after a takeover, `.invalidArgument` while a flush runs or
  /// when the buffer is full (after `.flushNeeded`, flush first).
  func append(_ bytes: UnsafeRawBufferPointer) throws -> AppendOutcome

  /// Writes the buffered bytes out, freeing the buffer; commits when `commitBytes` are waiting.
  ///
  /// Blocks: call it off the loop. Returns the committed state.
  @discardableResult
  func flush() throws -> UploadState

  /// Writes and commits every byte received: durable first, then the acknowledged offset.
  ///
  /// Blocks: call it off the loop. Returns the committed state.
  @discardableResult
  func commit() throws -> UploadState

  /// Commits every byte received and releases the lease; later calls return the same state.
  ///
  /// Blocks: call it off the loop. After a takeover it writes nothing and returns the state the
  /// pre-emption committed.
  @discardableResult
  func close() throws -> UploadState
}

extension UploadStore {
  /// Settles by taking the upload with a writer and closing it at once.
  public func settledState(tenant: String, id: String) throws -> UploadState? {
    guard let current = try state(tenant: tenant, id: id) else { return nil }
    guard current.status == .receiving else { return current }
    do {
      return try openWriter(tenant: tenant, id: id, offset: nil, length: nil) {}.close()
    } catch let error as StorageError
      where error.code == .uploadCompleted || error.code == .notFound || error.code == .inProgress
      || error.code == .full
    {
      // Completed or removed meanwhile, or held elsewhere: report what is committed now. On a
      // full volume the lease cannot be written, and nothing can be committed either: the
      // committed offset is the one a client resumes from once space is freed.
      return try state(tenant: tenant, id: id)
    }
  }

  /// Deletes every expired upload, `batch` at a time; returns how many went.
  public func deleteAllExpired(batch: Int = 500) throws -> Int {
    precondition(batch > 0, "batch must be positive")
    var total = 0
    while true {
      let removed = try deleteExpired(limit: batch).count
      total += removed
      if removed < batch { return total }
    }
  }
}
