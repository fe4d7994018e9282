import HTTP
import Server
import Storage

/// What one upload protocol decides around a request body that `UploadBodyConsumer` streams
/// into an upload: which upload and writer, what to send once it is open, how to answer at the
/// end. Plain spooled bodies, IETF resumable uploads and tus are each one of these.
///
/// Threads: every method runs off the event loop, on the server's upload I/O threads, one at a
/// time for a request, and may block (store calls). Answer through `handle`; a complete upload
/// is processed through `Uploads.complete`.
protocol UploadBodyDelegate: AnyObject, Sendable {
  /// Creates or finds the upload and opens its writer, before any body byte is read.
  ///
  /// Pass `onPreempted` to `UploadStore.openWriter`: the consumer needs to hear of a takeover.
  func openWriter(onPreempted: @escaping @Sendable () -> Void) throws -> any UploadWriter

  /// The writer is open; reading starts after this returns (send a `104` from here).
  func writerOpened(_ writer: any UploadWriter, handle: any RequestHandle)

  /// `openWriter` threw; answer the request.
  func openFailed(_ error: any Error, handle: any RequestHandle)

  /// A commit made `offset` durable while the body is still arriving (progress `104`s).
  func committed(offset: Int, handle: any RequestHandle)

  /// The writer is closed: the body ended, the client left, or the body was refused (an append
  /// past the upload's length or maximum, a failed write). Every byte that arrived before is
  /// committed. Answer the request, unless the client left.
  func closed(_ outcome: UploadCloseOutcome, handle: any RequestHandle)

  /// A newer request on the same upload took it over: this request's writer was committed and
  /// stopped. Answer this (stale) request, which ends its connection.
  func preempted(handle: any RequestHandle)
}

/// How a streamed body ended, for `UploadBodyDelegate.closed`.
struct UploadCloseOutcome: Sendable {
  /// Why the writer was closed.
  var reason: UploadStreamMachine.CloseReason
  /// What refused the body (an append or flush error), for `.refused`.
  var refusal: (any Error)?
  /// The state the close committed, or what made the close fail.
  var state: Result<UploadState, any Error>
  /// Body bytes this request brought (received by the server, whether kept or refused).
  var bytesReceived: Int
}

extension UploadCloseOutcome {
  /// Closes `writer` (committing what it received; none was opened when nil) and says how the
  /// body ended.
  init(
    closing writer: (any UploadWriter)?, reason: UploadStreamMachine.CloseReason, refusal: (any Error)?,
    bytesReceived: Int
  ) {
    let state: Result<UploadState, any Error> =
      writer.map { writer in Result { try writer.close() } }
      ?? .failure(StorageError(.invalidArgument, "no writer to close"))
    self.init(reason: reason, refusal: refusal, state: state, bytesReceived: bytesReceived)
  }
}
