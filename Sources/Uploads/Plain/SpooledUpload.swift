import HTTP
import Server
import Storage
import Synchronization

/// A plain `POST /v1/attachments` body over `spoolThreshold`, streamed into a throwaway upload
/// (protocol `plain`) instead of memory, then processed read in place and deleted.
///
/// Nobody can resume it (its id is never sent), so it is deleted however it ends: processed,
/// refused, or abandoned by its client. One that a crash left behind expires with
/// `lifetime` and is swept.
final class SpooledUpload: UploadBodyDelegate {
  /// How long a spooled body may exist: a crash's leftovers go after this.
  static let lifetime: Double = 3600

  private let uploads: Uploads
  private let request: UploadRequest
  private let declaredLength: Int?
  private let boundary: String?
  private let created = Mutex<String?>(nil)

  init(uploads: Uploads, request: UploadRequest, declaredLength: Int?, boundary: String?) {
    self.uploads = uploads
    self.request = request
    self.declaredLength = declaredLength
    self.boundary = boundary
  }

  private var tenant: String { request.caller.tenant }

  func openWriter(onPreempted: @escaping @Sendable () -> Void) throws -> any UploadWriter {
    let store = uploads.store
    let upload = try store.create(
      NewUpload(
        tenant: tenant, owner: request.caller.user, length: declaredLength, maxLength: request.maxBodyBytes,
        protocolName: "plain", lifetime: Self.lifetime))
    created.withLock { $0 = upload.id }
    return try store.openWriter(
      tenant: tenant, id: upload.id, offset: 0, length: nil, onPreempted: onPreempted)
  }

  func writerOpened(_ writer: any UploadWriter, handle: any RequestHandle) {}

  func openFailed(_ error: any Error, handle: any RequestHandle) {
    discard()
    handle.respond(uploads.problem(error, requestID: request.requestID))
  }

  func committed(offset: Int, handle: any RequestHandle) {}

  func closed(_ outcome: UploadCloseOutcome, handle: any RequestHandle) {
    switch outcome.reason {
    case .aborted:
      discard()
    case .refused:
      discard()
      let error: any Error =
        (outcome.refusal as? StorageError)?.code == .lengthExceeded
        ? request.overLimit : outcome.refusal ?? StorageError(.io, "body refused")
      handle.respond(uploads.problem(error, requestID: request.requestID))
    case .finished:
      if case .failure(let error) = outcome.state {
        discard()
        handle.respond(uploads.problem(error, requestID: request.requestID))
        return
      }
      process(handle: handle)
    }
  }

  func preempted(handle: any RequestHandle) {
    // Its id never left this process: only a bug, or the store's own expiry, gets here.
    handle.respond(
      uploads.problem(StorageError(.preempted, "spooled body taken over"), requestID: request.requestID))
  }

  /// The pipeline on the CPU workers; the spool goes once it answered (or at once, when there
  /// is nothing to answer).
  private func process(handle: any RequestHandle) {
    guard let id = created.withLock({ $0 }) else { return }
    let uploads = self.uploads
    let completion = request.completion(boundary: boundary, idempotencyKey: request.idempotencyKey)
    let cleanUp: @Sendable () -> Void = { [self] in discard() }
    uploads.processing(on: handle, finally: cleanUp) { [self] cancellation in
      do {
        return try uploads.complete(
          tenant: tenant, id: id, request: completion, record: false, cancellation: cancellation
        ).response
      } catch {
        return uploads.problem(error, requestID: request.requestID)
      }
    }
  }

  /// Deletes the upload and its spool file (blocking: an I/O or CPU worker).
  private func discard() {
    guard let id = created.withLock({ $0 }) else { return }
    do {
      try uploads.store.cancel(tenant: tenant, id: id)
    } catch {
      // It expires and is swept: the lifetime is short.
      uploads.host.warning(
        "spooled body not deleted",
        fields: [("request_id", request.requestID), ("detail", String(describing: error))])
    }
  }
}
