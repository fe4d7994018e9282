import Foundation
import HTTP
import Server
import Storage

/// The durable upload engine shared by every upload protocol: plain bodies spooled above
/// `spoolThreshold`, IETF resumable uploads, tus.
///
/// What a protocol adapter uses:
///
/// - **Streaming a body into an upload.** From `HTTPHandler.head`, answer
///   `.readBody(engine.consumer(delegate:))`. The `UploadBodyDelegate` opens (or creates) the
///   upload's writer before any byte is read — reading is paused meanwhile, so a `104` sent from
///   `writerOpened` precedes the body — and is told how the body ended (`closed`), or that a
///   newer request took the upload over (`preempted`). In between, the consumer appends each
///   slice to the writer on the event loop, pauses reading while the writer's buffer is flushed
///   on the server's upload I/O threads (`RequestHandle.execute`), commits on a timer
///   (`commitInterval`) so a slow upload's offset advances, and closes the writer when the body
///   ends or the client goes, so every byte that arrived is committed. Memory per upload: the
///   store's write buffer.
/// - **Completing.** `Uploads.complete` claims a complete upload, runs the pipeline on its body
///   read in place (a file mapping, no copy), and answers exactly what a plain upload of the
///   same bytes answers; the result is recorded, so a repeat answers the same.
/// - **Blocking store calls** (`state`, `settledState`, `setLength`, `cancel`) run on the upload
///   I/O threads (`.offload(.io, …)`), never on an event loop.
///
/// The engine talks to storage only through the `UploadStore` protocol.
public final class UploadEngine: Sendable {
  /// Where uploads live.
  public let store: any UploadStore
  /// Commits slow bodies on a timer.
  let ticker: UploadCommitTicker

  /// An engine over `store` committing slow bodies every `commitInterval` (from `start`).
  public init(store: any UploadStore, commitInterval: Duration) {
    self.store = store
    self.ticker = UploadCommitTicker(interval: commitInterval)
  }

  /// Starts the commit timer.
  public func start() { ticker.start() }

  /// Stops the commit timer, once the server has stopped.
  public func stop() { ticker.stop() }

  /// A body consumer streaming one request body into the upload `delegate` opens.
  ///
  /// `prelude`: body bytes already received in memory (appended first).
  func consumer(delegate: any UploadBodyDelegate, prelude: [UInt8] = []) -> UploadBodyConsumer {
    UploadBodyConsumer(engine: self, delegate: delegate, prelude: prelude)
  }

  /// Bodies streaming into uploads now.
  public var streamingBodies: Int { ticker.count }
}
