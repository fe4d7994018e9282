import Foundation
import HTTP
import Server
import Storage

/// The App side of the durable upload engine, shared by every upload protocol: plain bodies
/// spooled above `uploads.spoolThreshold`, IETF resumable uploads, tus.
///
/// What a protocol adapter uses:
///
/// - **Streaming a body into an upload.** From `HTTPHandler.head`, answer
///   `.readBody(engine.consumer(delegate:))`. The `UploadBodyDelegate` opens (or creates) the
///   upload's writer before any byte is read — reading is paused meanwhile, so a `104` sent from
///   `writerOpened` precedes the body — and is told how the body ended (`closed`), or that a
///   newer request took the upload over (`preempted`). In between, the consumer appends each
///   slice to the writer on the event loop, pauses reading while the writer's buffer is flushed
///   on this engine's I/O threads, commits on a timer (`uploads.commitInterval`) so a slow
///   upload's offset advances, and closes the writer when the body ends or the client goes, so
///   every byte that arrived is committed. Memory per upload: `uploads.writeBufferBytes`.
/// - **Completing.** `AttachmentService.completeUpload` (`UploadCompletion.swift`) claims a
///   complete upload, runs the pipeline on its body read in place (a file mapping, no copy),
///   and answers exactly what a plain upload of the same bytes answers (status, headers,
///   record; `Idempotency-Key` keeps its meaning); the result is recorded, so a repeat answers
///   the same. Run it on the worker pool (`RequestHandle.offload`).
/// - **Blocking store calls** (`state`, `settledState`, `setLength`, `cancel`) go through
///   `submit`, never on an event loop.
///
/// The engine talks to storage only through the `UploadStore` protocol: an S3 + PostgreSQL
/// store slots in beside `FileUploadStore`.
public final class UploadEngine: Sendable {
  /// Where uploads live.
  public let store: any UploadStore
  /// The settings in force.
  public let options: Application.UploadOptions
  /// Commits slow bodies on a timer.
  let ticker: UploadCommitTicker
  /// Threads for blocking upload work. Its queue is practically unbounded: a refused flush or
  /// close would strand a writer, and every queued job belongs to a connection that is paused.
  private let io: WorkerPool

  /// An engine over `store` (its threads start now; the ticker with `start`).
  public init(store: any UploadStore, options: Application.UploadOptions) {
    self.store = store
    self.options = options
    self.ticker = UploadCommitTicker(
      interval: .milliseconds(Int64((options.commitInterval * 1000).rounded())))
    self.io = WorkerPool(threads: options.ioThreads, queueLength: 1 << 20)
  }

  /// Starts the commit timer.
  public func start() { ticker.start() }

  /// Stops the commit timer and the I/O threads, once the server has stopped (queued work
  /// — closes of the last bodies — runs first).
  public func stop() {
    ticker.stop()
    io.shutdown(wait: true)
  }

  /// A body consumer streaming one request body into the upload `delegate` opens.
  ///
  /// `prelude`: body bytes already received in memory (appended first).
  func consumer(delegate: any UploadBodyDelegate, prelude: [UInt8] = []) -> UploadBodyConsumer {
    UploadBodyConsumer(engine: self, delegate: delegate, prelude: prelude)
  }

  /// Runs `work` on the I/O threads. Never refuses: after `stop` (or in the impossible case of
  /// a full queue) the work runs on a thread of its own, so a writer is always closed.
  func submit(_ work: @escaping @Sendable () -> Void) {
    guard !io.trySubmit(work) else { return }
    Thread.detachNewThread { work() }
  }

  /// Bodies streaming into uploads now.
  var streamingBodies: Int { ticker.count }
}
