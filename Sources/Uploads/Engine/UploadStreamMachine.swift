/// The rules of one request body streamed into an `UploadWriter`, as a value with no I/O: what
/// the consumer does on each event (a slice arrives, a flush or commit finishes, the body ends,
/// the client leaves, the commit timer fires). `UploadBodyConsumer` runs the actions.
///
/// Invariants it keeps:
/// - at most one blocking writer call (open, flush, commit, close) runs at a time, and none
///   while a slice is appended: the writer refuses appends during a flush;
/// - reading is paused whenever a blocking call runs because of the body (open, flush); a
///   timer commit runs while reading goes on, and a slice that arrives meanwhile is stashed
///   (copied, at most one slice) and reading pauses until the commit is done;
/// - the writer is closed exactly once, after the last call on it, whatever ends the request
///   (end of body, client gone, a refusal), so every byte that arrived is kept;
/// - nothing happens after the request was taken over by a newer one.
struct UploadStreamMachine: Equatable {
  enum Phase: Equatable {
    /// `start` has not run yet.
    case idle
    /// The writer is being opened (the body is not read meanwhile).
    case opening
    /// Slices go to the writer.
    case streaming
    /// The writer is being closed, or was; no more slices.
    case closing
    /// A newer request took the upload over, or the writer could not be opened.
    case stopped
  }

  /// Why the writer is closed.
  enum CloseReason: Equatable {
    /// The whole body arrived.
    case finished
    /// The client went away (or timed out) mid-body.
    case aborted
    /// The consumer refused the body (over a limit, a write failed).
    case refused
  }

  /// What the consumer must do next.
  enum Action: Equatable {
    /// Nothing.
    case none
    /// Answer the server's call with `.pause`; open the writer off the loop.
    case open
    /// Append the slice now.
    case append
    /// Copy the slice aside and answer `.pause`.
    case stash
    /// Answer `.pause`; flush off the loop.
    case flush
    /// Commit off the loop (reading goes on).
    case commit
    /// Append the stashed slice (then report its outcome like any append).
    case appendStash
    /// Resume reading.
    case resume
    /// Close the writer off the loop, for `reason`.
    case close(CloseReason)
  }

  private(set) var phase = Phase.idle
  /// A blocking writer call (open, flush, commit) is running.
  private(set) var ioBusy = false
  /// The server was told `.pause` and has not been resumed.
  private(set) var paused = false
  /// A slice is stashed.
  private(set) var stashed = false
  /// Why to close once the running call is done (the body ended or the client left meanwhile).
  private var closeWhenIdle: CloseReason?

  /// `start`: open the writer before any byte is read.
  mutating func start() -> Action {
    precondition(phase == .idle, "started twice")
    phase = .opening
    ioBusy = true
    paused = true
    return .open
  }

  /// The writer is open (off the loop). `prelude`: bytes that arrived before the writer existed
  /// wait to be appended first, like a stashed slice.
  mutating func opened(prelude: Bool = false) -> Action {
    guard phase == .opening else { return .none }
    phase = .streaming
    ioBusy = false
    stashed = prelude
    return idle()
  }

  /// The writer could not be opened: the consumer answers with the error; nothing to close.
  mutating func openFailed() {
    ioBusy = false
    phase = .stopped
  }

  /// A slice arrived (on the loop).
  mutating func slice() -> Action {
    guard phase == .streaming else { return .none }
    if ioBusy {
      precondition(!stashed, "a slice arrived while reading was paused")
      stashed = true
      paused = true
      return .stash
    }
    return .append
  }

  /// What the append of a slice (or of the stash) said.
  enum AppendResult: Equatable {
    case buffered
    case flushNeeded
    case refused
  }

  /// The outcome of `.append` or `.appendStash`.
  mutating func appended(_ result: AppendResult, fromStash: Bool = false) -> Action {
    if fromStash { stashed = false }
    guard phase == .streaming else { return .none }
    switch result {
    case .buffered:
      return fromStash && paused ? resume() : .none
    case .flushNeeded:
      ioBusy = true
      paused = true
      return .flush
    case .refused:
      return beginClose(.refused)
    }
  }

  /// The commit timer fired and the writer holds bytes not yet committed.
  mutating func commitDue() -> Action {
    guard phase == .streaming, !ioBusy else { return .none }
    ioBusy = true
    return .commit
  }

  /// A flush or commit finished (successfully; a failure is `failed`).
  mutating func ioFinished() -> Action {
    guard ioBusy, phase == .streaming else { return .none }
    ioBusy = false
    return idle()
  }

  /// The body ended (on the loop).
  mutating func ended() -> Action { requestClose(.finished) }

  /// The client left (on the loop).
  mutating func aborted() -> Action { requestClose(.aborted) }

  /// A flush or commit failed: no more slices; close (what was committed stays).
  mutating func failed() -> Action {
    ioBusy = false
    stashed = false
    return beginClose(.refused)
  }

  /// A newer request took the upload over: stop; the writer was finished by the store.
  mutating func preempted() {
    phase = .stopped
    ioBusy = false
    stashed = false
    closeWhenIdle = nil
  }

  /// The close ran.
  mutating func closed() {
    if phase == .closing { phase = .stopped }
  }

  // MARK: - Internals

  private mutating func requestClose(_ reason: CloseReason) -> Action {
    switch phase {
    case .opening:
      closeWhenIdle = closeWhenIdle ?? reason
      return .none
    case .streaming where ioBusy:
      closeWhenIdle = closeWhenIdle ?? reason
      return .none
    case .streaming:
      return beginClose(reason)
    case .idle, .closing, .stopped:
      return .none
    }
  }

  private mutating func beginClose(_ reason: CloseReason) -> Action {
    guard phase == .streaming else { return .none }
    phase = .closing
    closeWhenIdle = nil
    stashed = false
    paused = false
    return .close(reason)
  }

  /// No call runs: close if asked, else append the stash, else resume a paused read.
  private mutating func idle() -> Action {
    if let reason = closeWhenIdle { return beginClose(reason) }
    if stashed { return .appendStash }
    return paused ? resume() : .none
  }

  private mutating func resume() -> Action {
    paused = false
    return .resume
  }
}
