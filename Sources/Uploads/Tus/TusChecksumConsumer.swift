import Crypto
import HTTP
import Server
import Storage
import Synchronization

/// Reads a tus chunk that carries a checksum (`Upload-Checksum`, or announced as a trailer):
/// the bytes are held aside — memory up to `uploads.writeBufferBytes`, then an unlinked scratch
/// file — and reach the upload only once their digest matches. A mismatch answers 460 and the
/// upload is untouched, as the checksum extension requires; so is a chunk cut off before its
/// end, which cannot be verified.
///
/// The writer is opened before any byte is read (the offset is checked and a writer in flight
/// is taken over, as for any PATCH) and held, unwritten, while the chunk arrives. Blocking work
/// (opening, spilling, verifying, writing) runs on the server's upload I/O threads while
/// reading is paused; the answer is `TusChunkDelegate`'s, as for a streamed chunk.
final class TusChecksumConsumer: RequestBodyConsumer, Sendable {
  private enum Phase {
    case idle, opening, reading, spilling, finishing, done
  }

  /// An end of body that arrived while blocking work ran.
  private enum Pending {
    case end(HTTPHeaders)
    case aborted
  }

  private struct State {
    var phase = Phase.idle
    var pending: Pending?
    var handle: (any RequestHandle)?
    var writer: (any UploadWriter)?
    var received = 0
    /// A newer request took the upload over; its answer is `preempt`'s.
    var preempted = false
  }

  private let tus: TusUploads
  private let delegate: TusChunkDelegate
  private let source: TusUploads.ChecksumSource
  private let held: HeldBytes
  /// The running digest of a checksum given in the head, fed as bytes leave memory.
  private let digest: Mutex<MessageDigest?>
  private let state = Mutex(State())

  init(tus: TusUploads, delegate: TusChunkDelegate, checksum: TusUploads.ChecksumSource) {
    self.tus = tus
    self.delegate = delegate
    self.source = checksum
    self.held = HeldBytes(
      directory: tus.uploads.scratchDirectory, memoryBytes: tus.uploads.configuration.writeBufferBytes)
    if case .header(let checksum) = checksum {
      digest = Mutex(MessageDigest(checksum.algorithm))
    } else {
      digest = Mutex(nil)
    }
  }

  // MARK: - RequestBodyConsumer (on the event loop)

  func start(_ request: any RequestHandle) -> BodyAction {
    state.withLock {
      $0.handle = request
      $0.phase = .opening
    }
    submit { $0.open() }
    return .pause
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    let next = state.withLock { state -> Phase? in
      guard state.phase == .reading, let writer = state.writer else { return nil }
      state.received += bytes.count
      let upload = writer.upload
      // A chunked body learns its size as it comes: past what the upload can take, stop.
      guard upload.offset + state.received <= upload.limit else {
        state.phase = .done
        return .done
      }
      do {
        guard try held.append(bytes) else { return nil }
      } catch {
        state.phase = .done
        return .done
      }
      state.phase = .spilling
      return .spilling
    }
    switch next {
    case nil: return .proceed
    case .spilling?:
      submit { $0.spill() }
      return .pause
    default:
      submit { $0.refuse(StorageError(.lengthExceeded, "chunk past the upload's length")) }
      return .pause
    }
  }

  func end(trailers: HTTPHeaders) {
    let finish = state.withLock { state -> Bool in
      guard state.phase == .reading else {
        if state.phase != .done { state.pending = .end(trailers) }
        return false
      }
      state.phase = .finishing
      return true
    }
    if finish { submit { $0.finish(trailers: trailers) } }
  }

  func aborted(bytesReceived: UInt64) {
    let abort = state.withLock { state -> Bool in
      guard state.phase == .reading else {
        if state.phase != .done { state.pending = .aborted }
        return false
      }
      state.phase = .done
      return true
    }
    if abort { submit { $0.abort() } }
  }

  // MARK: - Blocking work (the upload I/O threads)

  private func open() {
    guard let handle = state.withLock({ $0.handle }) else { return }
    let writer: any UploadWriter
    do {
      writer = try delegate.openWriter(onPreempted: { [weak self] in self?.preempt() })
    } catch {
      state.withLock { $0.phase = .done }
      held.close()
      delegate.openFailed(error, handle: handle)
      return
    }
    state.withLock {
      $0.writer = writer
      $0.phase = .reading
    }
    continueReading(handle)
  }

  /// Moves the full memory part to the scratch file (hashing it on the way), then reads on.
  private func spill() {
    do {
      try digest.withLock { digest in try held.spill { digest?.update($0) } }
    } catch {
      refuse(error)
      return
    }
    guard
      let handle = state.withLock({ state -> (any RequestHandle)? in
        guard state.phase == .spilling else { return nil }
        state.phase = .reading
        return state.handle
      })
    else { return }
    continueReading(handle)
  }

  /// Reading may go on: act on an end that arrived meanwhile, else resume the socket.
  private func continueReading(_ handle: any RequestHandle) {
    let pending = state.withLock { state -> Pending? in
      let pending = state.pending
      state.pending = nil
      switch pending {
      case .end?: state.phase = .finishing
      case .aborted?: state.phase = .done
      case nil: break
      }
      return pending
    }
    switch pending {
    case .end(let trailers)?: finish(trailers: trailers)
    case .aborted?: abort()
    case nil: handle.resumeReading()
    }
  }

  /// The whole chunk is here: verify it, then write it through the writer and close.
  private func finish(trailers: HTTPHeaders) {
    guard
      let (writer, handle, received) = state.withLock({ state in
        state.writer.map { ($0, state.handle, state.received) }
      }), let handle
    else { return }
    let matched: Bool
    do {
      matched = try verify(trailers: trailers)
    } catch {
      refuse(error)
      return
    }
    guard matched else {
      refuse(TusError.checksumMismatch(offset: writer.upload.offset))
      return
    }
    do {
      try held.forEachPiece(pieceBytes: tus.uploads.configuration.writeBufferBytes) { piece in
        if try writer.append(piece) == .flushNeeded { try writer.flush() }
      }
    } catch let error as StorageError where error.code == .preempted {
      // `preempt` answers: the takeover is the story, not this failure.
      held.close()
      return
    } catch {
      refuse(error)
      return
    }
    held.close()
    let closed = Result { try writer.close() }
    state.withLock { $0.phase = .done }
    delegate.closed(
      UploadCloseOutcome(reason: .finished, refusal: nil, state: closed, bytesReceived: received),
      handle: handle)
  }

  /// Whether the held chunk's digest is the one the client sent (in the head or the trailer).
  private func verify(trailers: HTTPHeaders) throws -> Bool {
    switch source {
    case .header(let checksum):
      let computed = digest.withLock { digest -> [UInt8] in
        guard let digest else { return [] }
        held.observeMemory { digest.update($0) }
        return digest.finalize()
      }
      return checksum.matches(computed)
    case .trailer:
      let values = trailers["Upload-Checksum"]
      guard values.count == 1 else { throw TusError.invalidChecksum }
      let checksum = try TusChecksum(parsing: values[0])
      let digest = MessageDigest(checksum.algorithm)
      try held.forEachPiece(pieceBytes: tus.uploads.configuration.writeBufferBytes) { digest.update($0) }
      return checksum.matches(digest.finalize())
    }
  }

  /// Ends the request without writing the chunk: the upload keeps what it had.
  private func refuse(_ error: any Error) { end(.refused, refusal: error) }

  /// The client left: a chunk that never ended cannot be verified, so none of it is kept.
  private func abort() { end(.aborted, refusal: nil) }

  /// Drops the held chunk, closes the writer and tells the delegate how the body ended (unless
  /// a takeover already answered).
  private func end(_ reason: UploadStreamMachine.CloseReason, refusal: (any Error)?) {
    held.close()
    let (writer, handle, received, preempted) = state.withLock { state in
      state.phase = .done
      return (state.writer, state.handle, state.received, state.preempted)
    }
    guard let handle, !preempted else { return }
    delegate.closed(
      UploadCloseOutcome(closing: writer, reason: reason, refusal: refusal, bytesReceived: received),
      handle: handle)
  }

  /// The store's takeover callback (any thread, quick): stop; answer off the loop.
  private func preempt() {
    let handle = state.withLock { state -> (any RequestHandle)? in
      state.phase = .done
      state.pending = nil
      state.writer = nil
      state.preempted = true
      return state.handle
    }
    guard let handle else { return }
    let delegate = self.delegate
    handle.execute { [held] in
      held.close()
      delegate.preempted(handle: handle)
    }
  }

  /// Runs `work` on the upload I/O threads for this request (its handle is known from `start`).
  private func submit(_ work: @escaping @Sendable (TusChecksumConsumer) -> Void) {
    state.withLock { $0.handle }?.execute { [self] in work(self) }
  }
}
