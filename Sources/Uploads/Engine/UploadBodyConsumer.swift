import HTTP
import Server
import Storage
import Synchronization

/// Streams one request body into an `UploadWriter` with backpressure: reading pauses while the
/// writer is opened and while its buffer is flushed (both off the loop, on the server's upload
/// I/O threads); a timer commits slow uploads so their offset advances; the writer is closed at the
/// end of the body and when the client goes, so every byte that arrived is kept.
///
/// Protocol-neutral: which upload, and what to answer, is the `UploadBodyDelegate`'s. The rules
/// are `UploadStreamMachine`'s; this class runs its actions. Memory per request: the writer's
/// buffer, plus at most one stashed slice while a timer commit runs.
final class UploadBodyConsumer: RequestBodyConsumer, Sendable {
  private struct State {
    var machine = UploadStreamMachine()
    var handle: (any RequestHandle)?
    var writer: (any UploadWriter)?
    /// A slice that arrived while a timer commit ran, or the prelude; appended next.
    var stash: [UInt8]
    var received: Int
    /// What refused the body, when something did.
    var refusal: (any Error)?
    /// When the last commit (or the open) happened.
    var lastCommit: ContinuousClock.Instant = .now
    /// The highest committed offset told to the delegate.
    var reportedOffset = 0
  }

  private let engine: UploadEngine
  private let delegate: any UploadBodyDelegate
  private let state: Mutex<State>

  /// A consumer for one request; `prelude` holds body bytes that arrived before it took over
  /// (a chunked plain body that passed the spool threshold in memory): they are appended first.
  init(engine: UploadEngine, delegate: any UploadBodyDelegate, prelude: [UInt8] = []) {
    self.engine = engine
    self.delegate = delegate
    self.state = Mutex(State(stash: prelude, received: prelude.count))
  }

  // MARK: - RequestBodyConsumer (on the event loop)

  func start(_ request: any RequestHandle) -> BodyAction {
    let action = state.withLock { state in
      state.handle = request
      return state.machine.start()
    }
    return run(action)
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    let action = state.withLock { state -> UploadStreamMachine.Action in
      state.received += bytes.count
      switch state.machine.slice() {
      case .append:
        return state.machine.appended(Self.append(bytes, to: &state))
      case .stash:
        state.stash = Array(bytes)
        return .stash
      case let other:
        return other
      }
    }
    return run(action)
  }

  func end(trailers: HTTPHeaders) {
    run(state.withLock { $0.machine.ended() })
  }

  func aborted(bytesReceived: UInt64) {
    run(state.withLock { $0.machine.aborted() })
  }

  // MARK: - Timer (the engine's ticker thread)

  /// Commits every `interval` while the body streams. Returns false once the body is over (the
  /// ticker then forgets this consumer).
  ///
  /// Also when nothing arrived since the last commit: a writer hears that a request on another
  /// node wants its upload only from a commit, so a client that went silent (a dead radio link
  /// keeps its connection open) and resumed through another node would otherwise wait for the
  /// lease to lapse. Such a commit writes no bytes, sends no `104` and renews the lease: one
  /// index statement per silent upload per interval.
  func tick(now: ContinuousClock.Instant, interval: Duration) -> Bool {
    let (action, live) = state.withLock { state -> (UploadStreamMachine.Action, Bool) in
      let phase = state.machine.phase
      let live = phase == .streaming || phase == .opening
      guard phase == .streaming, now - state.lastCommit >= interval, state.writer != nil
      else { return (.none, live) }
      return (state.machine.commitDue(), live)
    }
    run(action)
    return live
  }

  // MARK: - Actions

  /// Runs `action`; returns the answer to the server's call it came from.
  @discardableResult
  private func run(_ action: UploadStreamMachine.Action) -> BodyAction {
    switch action {
    case .none, .append:
      return .proceed
    case .open:
      submit { $0.open() }
      return .pause
    case .stash:
      return .pause
    case .flush:
      submit { $0.writerCall(flush: true) }
      return .pause
    case .commit:
      submit { $0.writerCall(flush: false) }
      return .proceed
    case .appendStash:
      let next = state.withLock { state -> UploadStreamMachine.Action in
        let stash = state.stash
        state.stash = []
        let result = stash.withUnsafeBytes { Self.append($0, to: &state) }
        return state.machine.appended(result, fromStash: true)
      }
      return run(next)
    case .resume:
      state.withLock { $0.handle }?.resumeReading()
      return .proceed
    case .close(let reason):
      submit { $0.close(reason) }
      return .pause
    }
  }

  /// Appends under the state lock (the writer's append only copies: loop-safe).
  private static func append(_ bytes: UnsafeRawBufferPointer, to state: inout State)
    -> UploadStreamMachine.AppendResult
  {
    guard let writer = state.writer else { return .refused }
    do {
      return try writer.append(bytes) == .flushNeeded ? .flushNeeded : .buffered
    } catch {
      state.refusal = error
      return .refused
    }
  }

  /// Opens the writer (I/O threads), then lets reading start.
  private func open() {
    guard let handle = state.withLock({ $0.handle }) else { return }
    let writer: any UploadWriter
    do {
      writer = try delegate.openWriter(onPreempted: { [weak self] in self?.preempt() })
    } catch {
      state.withLock { $0.machine.openFailed() }
      delegate.openFailed(error, handle: handle)
      return
    }
    state.withLock {
      $0.writer = writer
      $0.lastCommit = .now
      $0.reportedOffset = writer.committedOffset
    }
    engine.ticker.register(self)
    delegate.writerOpened(writer, handle: handle)
    run(state.withLock { $0.machine.opened(prelude: !$0.stash.isEmpty) })
  }

  /// A flush or a timer commit (I/O threads); then whatever the machine says comes next.
  private func writerCall(flush: Bool) {
    guard let writer = state.withLock({ $0.writer }) else { return }
    do {
      if flush { try writer.flush() } else { try writer.commit() }
    } catch let error as StorageError where error.code == .preempted {
      // `preempt` answers: the takeover is the story, not this failure.
      return
    } catch {
      run(
        state.withLock { state in
          state.refusal = error
          return state.machine.failed()
        })
      return
    }
    let committed = writer.committedOffset
    let (action, report, handle) = state.withLock { state in
      if !flush { state.lastCommit = .now }
      let report = committed > state.reportedOffset
      if report { state.reportedOffset = committed }
      return (state.machine.ioFinished(), report, state.handle)
    }
    if report, let handle { delegate.committed(offset: committed, handle: handle) }
    run(action)
  }

  /// Closes the writer (I/O threads) and tells the delegate how the body ended.
  private func close(_ reason: UploadStreamMachine.CloseReason) {
    engine.ticker.unregister(self)
    let (writer, handle, refusal, received) = state.withLock {
      ($0.writer, $0.handle, $0.refusal, $0.received)
    }
    // A takeover between the close being asked for and running it stopped the writer and
    // answered (`preempt`): nothing is left to close or to say. (A client cut mid-body whose
    // HTTP library resent the request on a new connection at once was seen to do this.)
    guard let writer else { return }
    let outcome = UploadCloseOutcome(
      closing: writer, reason: reason, refusal: refusal, bytesReceived: received)
    state.withLock {
      $0.machine.closed()
      $0.writer = nil
    }
    guard let handle else { return }
    delegate.closed(outcome, handle: handle)
  }

  /// The store's takeover callback (any thread, must be quick): stop, answer off the loop.
  private func preempt() {
    let handle = state.withLock { state -> (any RequestHandle)? in
      state.machine.preempted()
      state.stash = []
      state.writer = nil
      return state.handle
    }
    engine.ticker.unregister(self)
    guard let handle else { return }
    let delegate = self.delegate
    handle.execute { delegate.preempted(handle: handle) }
  }

  /// Runs `work` on the upload I/O threads for this request (its handle is known from `start`).
  private func submit(_ work: @escaping @Sendable (UploadBodyConsumer) -> Void) {
    state.withLock { $0.handle }?.execute { [self] in work(self) }
  }
}
