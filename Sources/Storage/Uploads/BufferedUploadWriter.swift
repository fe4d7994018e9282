import Foundation
import Synchronization

/// One request's writer on an upload: a bounded buffer filled on the loop, written out to the
/// upload's spool off it, and committed (durable, then the offset in the index) every
/// `commitBytes` and at the end, under the upload's slot lock. `LeasedUploadStore` makes one per
/// `openWriter`; what "written out" and "durable" mean is the spool's (`UploadSpool`).
///
/// Two locks: the slot's `io` lock (held by flush, close and a takeover, across the I/O) and
/// this writer's `state` lock (held only to copy a slice or to read or update the counters, so
/// `append` never waits for I/O). `flushing` tells `append` that the buffer is being written.
final class BufferedUploadWriter: UploadWriter {
  let upload: UploadState
  /// This writer's lease token in the index.
  let token: String
  private let slots: UploadSlots
  private let slot: UploadSlots.Slot
  private let spool: any UploadSpool
  private let configuration: UploadStoreConfiguration
  private let clock: @Sendable () -> Date
  private let onPreempted: @Sendable () -> Void
  private let state: Mutex<State>

  private enum Stop {
    case closed
    case preempted
    case failed(StorageError)
  }

  private struct State {
    /// Allocated at the first bytes, never larger than what the upload can still take.
    var buffer: WriteBuffer?
    /// Bytes acknowledged: durable, and the offset committed to the index.
    var committed: Int
    /// Bytes written to the spool after `committed`, not yet durable nor acknowledged.
    var written = 0
    var limit: Int
    var flushing = false
    var stop: Stop?
    var current: UploadState
    var leaseExpiresAt: Date
    var released = false

    /// The offset the next appended byte lands at.
    var received: Int { committed + written + (buffer?.count ?? 0) }
  }

  /// A writer on `spool`, registered as the slot's holder by the caller.
  init(
    slots: UploadSlots, spool: any UploadSpool, configuration: UploadStoreConfiguration,
    clock: @escaping @Sendable () -> Date, upload: UploadState, token: String, leaseExpiresAt: Date,
    onPreempted: @escaping @Sendable () -> Void
  ) {
    self.slots = slots
    // Kept in the table while this writer lives; given back by `finish` or `deinit`.
    self.slot = slots.retain(upload.id)
    self.spool = spool
    self.configuration = configuration
    self.clock = clock
    self.upload = upload
    self.token = token
    self.onPreempted = onPreempted
    self.state = Mutex(
      State(committed: upload.offset, limit: upload.limit, current: upload, leaseExpiresAt: leaseExpiresAt))
  }

  deinit {
    // Dropped without `close`: free what is held; the lease in the index is recognised as this
    // instance's dead writer by the next request. No slot lock here (it may be held by the
    // thread that dropped the last reference).
    letGo { _ in }
  }

  var isPreempted: Bool {
    state.withLock { if case .preempted = $0.stop { true } else { false } }
  }

  var committedOffset: Int { state.withLock { $0.committed } }

  var receivedOffset: Int { state.withLock { $0.received } }

  func append(_ bytes: UnsafeRawBufferPointer) throws -> AppendOutcome {
    let capacity = configuration.writeBufferBytes
    let id = upload.id
    // The copy happens under the state lock: a takeover on another thread sets `stop` under it
    // and then reads the buffer, so it sees every slice accepted before, and none after.
    return try state.withLock { state -> AppendOutcome in
      if let stop = state.stop { throw Self.error(stop, offset: state.committed) }
      guard !state.flushing else { throw StorageError(.invalidArgument, "append while a flush runs") }
      guard !(state.buffer?.isFull ?? false) else {
        throw StorageError(.invalidArgument, "append to a full buffer: flush first")
      }
      guard bytes.count <= state.limit - state.received else {
        throw StorageError(
          .lengthExceeded, "append past \(state.limit) bytes of \(id)", offset: state.committed)
      }
      guard bytes.count > 0 else { return .buffered }
      let buffer = state.buffer ?? WriteBuffer(capacity: min(capacity, state.limit - state.received))
      state.buffer = buffer
      return buffer.append(bytes) ? .flushNeeded : .buffered
    }
  }

  @discardableResult
  func flush() throws -> UploadState { try persist(.writeOut) }

  @discardableResult
  func commit() throws -> UploadState { try persist(.commit) }

  @discardableResult
  func close() throws -> UploadState {
    var notify = false
    let result = slot.io.withLock { holder -> Result<UploadState, any Error> in
      do {
        if let done = try checkRunning(closing: true) { return .success(done) }
        let (current, _) = try writeOut(.release, holder: &holder)
        finish(.closed, holder: &holder)
        return .success(current)
      } catch let error as StorageError where error.code == .preempted {
        // The lease went to another instance first: what was buffered is not committed.
        notify = true
        return .success(state.withLock { $0.current })
      } catch {
        return .failure(error)
      }
    }
    if notify { onPreempted() }
    return try result.get()
  }

  /// Stops this writer for a newer request, committing what it had received when `persist`.
  ///
  /// Called by the store with the slot lock held. Returns the callback to run once the lock is
  /// released, or nil when the writer had already stopped.
  func preempt(persist: Bool, holder: inout UploadSlots.Holder) -> (@Sendable () -> Void)? {
    let live = state.withLock { state -> Bool in
      guard state.stop == nil else { return false }
      state.stop = .preempted  // from here on, appends are refused
      return true
    }
    guard live else { return nil }
    if persist {
      // Failing here loses only unacknowledged bytes: the offset stays at the last commit.
      _ = try? writeOut(.release, holder: &holder)
    } else {
      let committed = committedOffset
      _ = try? spool.commit(from: committed, to: committed, leaseUntil: nil)
    }
    finish(.preempted, holder: &holder)
    return onPreempted
  }

  // MARK: - Internals

  /// Throws when stopped; for `close`, returns the final state of a writer that already stopped.
  @discardableResult
  private func checkRunning(closing: Bool) throws -> UploadState? {
    try state.withLock { state in
      switch state.stop {
      case nil: return nil
      case .closed?, .preempted?:
        if closing { return state.current }
        throw Self.error(state.stop!, offset: state.committed)
      case .failed(let error)?: throw error
      }
    }
  }

  /// How far a `writeOut` goes.
  private enum Depth {
    /// Write the buffer to the spool; commit once `commitBytes` are waiting.
    case writeOut
    /// Write and commit, keeping the lease.
    case commit
    /// Write, commit and give the lease up.
    case release
  }

  /// `flush` and `commit`: a write-out under the slot lock, telling the owner of a takeover.
  private func persist(_ depth: Depth) throws -> UploadState {
    var notify = false
    let result = slot.io.withLock { holder -> Result<UploadState, any Error> in
      do {
        try checkRunning(closing: false)
      } catch {
        return .failure(error)
      }
      do {
        let (current, wanted) = try writeOut(depth, holder: &holder)
        guard wanted else { return .success(current) }
        // A request of another instance asked for the lease: hand it over now the bytes are in.
        _ = try? spool.commit(from: current.offset, to: current.offset, leaseUntil: nil)
        finish(.preempted, holder: &holder)
        notify = true
        return .success(current)
      } catch {
        // The lease went to another instance before these bytes could be committed.
        notify = (error as? StorageError)?.code == .preempted
        return .failure(error)
      }
    }
    if notify { onPreempted() }
    return try result.get()
  }

  /// Writes what is buffered to the spool and, when due, commits it (durable, then the new
  /// offset to the index, renewing the lease or giving it up for `.release`). Slot lock held.
  /// Returns the committed state and whether a request of another instance wants the lease.
  private func writeOut(_ depth: Depth, holder: inout UploadSlots.Holder) throws -> (UploadState, Bool) {
    let (buffer, committed, written, leaseExpiry) = state.withLock { state in
      state.flushing = true
      return (state.buffer, state.committed, state.written, state.leaseExpiresAt)
    }
    let count = buffer?.count ?? 0
    do {
      let now = clock()
      let duration = configuration.leaseDuration
      var leaseUntil = leaseExpiry
      if let buffer, count > 0 {
        // Write only under a lease that cannot lapse meanwhile: renew it first when it is half
        // gone, so another process cannot have taken it over while these bytes land.
        if leaseExpiry.timeIntervalSince(now) < duration / 2 {
          leaseUntil = now.addingTimeInterval(duration)
          if try spool.commit(from: committed, to: committed, leaseUntil: leaseUntil) == .lost {
            throw StorageError(.preempted, "lease of \(upload.id) lost", offset: committed)
          }
        }
        try spool.write(buffer, at: committed + written)
      }
      let pending = written + count
      guard depth != .writeOut || (pending > 0 && pending >= configuration.commitBytes) else {
        // Written out, not yet durable: the buffer is free again; the offset stays.
        let current = state.withLock { state in
          state.flushing = false
          state.written = pending
          state.buffer?.reset()
          state.leaseExpiresAt = leaseUntil
          return state.current
        }
        return (current, false)
      }
      let expiry = depth == .release ? nil : now.addingTimeInterval(duration)
      let commit = try spool.commit(from: committed, to: committed + pending, leaseUntil: expiry)
      guard case .committed(let wanted) = commit else {
        throw StorageError(.preempted, "lease of \(upload.id) lost", offset: committed)
      }
      let current = state.withLock { state in
        state.flushing = false
        state.committed = committed + pending
        state.written = 0
        state.buffer?.reset()
        state.current.offset = committed + pending
        if let expiry { state.leaseExpiresAt = expiry }
        return state.current
      }
      return (current, wanted)
    } catch let error as StorageError {
      // Unacknowledged bytes may sit past the committed offset in the spool: they are cut off
      // now (on a full disk that space is wanted; the next writer would cut them anyway). A
      // failed durability step is not retried (a file's kernel pages may have been dropped; an
      // object store's part may be half there).
      state.withLock { $0.flushing = false }
      if error.code != .preempted {
        spool.cutBack(to: committed)
        _ = try? spool.commit(from: committed, to: committed, leaseUntil: nil)
      }
      // The failure says where the upload stands (a full disk can stop a body after some of
      // its commits), so that its answer tells the client the offset to resume from.
      let failure = error.offset == nil ? StorageError(error.code, error.detail, offset: committed) : error
      finish(error.code == .preempted ? .preempted : .failed(failure), holder: &holder)
      throw failure
    }
  }

  /// Marks the writer stopped, frees its buffer and spool, and leaves the slot. Slot lock held.
  private func finish(_ stop: Stop, holder: inout UploadSlots.Holder) {
    if holder.writer === self { holder.writer = nil }
    letGo { state in
      if case .preempted? = state.stop, case .failed = stop {
        // A takeover's failed persist stays a takeover for the old request.
      } else {
        state.stop = stop
      }
    }
  }

  /// Frees the buffer and the spool and gives the slot back (once), after `update` under the
  /// state lock.
  private func letGo(_ update: (inout State) -> Void) {
    let release = state.withLock { state -> Bool in
      update(&state)
      let release = !state.released
      state.released = true
      state.buffer = nil
      return release
    }
    spool.discard()
    if release { slots.release(upload.id) }
  }

  private static func error(_ stop: Stop, offset: Int) -> StorageError {
    switch stop {
    case .closed: StorageError(.invalidArgument, "writer is closed", offset: offset)
    case .preempted: StorageError(.preempted, "a newer request took the upload over", offset: offset)
    case .failed(let error): error
    }
  }
}
