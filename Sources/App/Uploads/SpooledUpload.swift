import HTTP
import ImagePipeline
import Server
import Storage
import Synchronization

/// A plain `POST /v1/attachments` body over `uploads.spoolThreshold`, streamed into a throwaway
/// upload (protocol `plain`) instead of memory, then processed read in place and deleted.
///
/// Nobody can resume it (its id is never sent), so it is deleted however it ends: processed,
/// refused, or abandoned by its client. One that a crash left behind expires with
/// `lifetime` and is swept.
final class SpooledUpload: UploadBodyDelegate {
  /// How long a spooled body may exist: a crash's leftovers go after this.
  static let lifetime: Double = 3600

  private let service: AttachmentService
  private let request: UploadRequest
  private let declaredLength: Int?
  private let shape: AttachmentService.UploadBodyShape
  private let created = Mutex<String?>(nil)

  init(
    service: AttachmentService, request: UploadRequest, declaredLength: Int?,
    shape: AttachmentService.UploadBodyShape
  ) {
    self.service = service
    self.request = request
    self.declaredLength = declaredLength
    self.shape = shape
  }

  private var tenant: String { request.principal.tenant }

  func openWriter(onPreempted: @escaping @Sendable () -> Void) throws -> any UploadWriter {
    let store = service.uploads.store
    let upload = try store.create(
      NewUpload(
        tenant: tenant, owner: request.principal.user, length: declaredLength,
        maxLength: request.maxBodyBytes,
        protocolName: "plain", lifetime: Self.lifetime))
    created.withLock { $0 = upload.id }
    return try store.openWriter(
      tenant: tenant, id: upload.id, offset: 0, length: nil, onPreempted: onPreempted)
  }

  func writerOpened(_ writer: any UploadWriter, handle: any RequestHandle) {}

  func openFailed(_ error: any Error, handle: any RequestHandle) {
    discard()
    request.slot.release()
    handle.respond(service.problem(error, requestID: request.requestID))
  }

  func committed(offset: Int, handle: any RequestHandle) {}

  func closed(_ outcome: UploadCloseOutcome, handle: any RequestHandle) {
    switch outcome.reason {
    case .aborted:
      discard()
      request.slot.release()
    case .refused:
      discard()
      request.slot.release()
      let error: any Error =
        (outcome.refusal as? StorageError)?.code == .lengthExceeded
        ? request.overLimit
        : outcome.refusal
          ?? StorageError(.io, "body refused")
      handle.respond(service.problem(error, requestID: request.requestID))
    case .finished:
      if case .failure(let error) = outcome.state {
        discard()
        request.slot.release()
        handle.respond(service.problem(error, requestID: request.requestID))
        return
      }
      process(handle: handle)
    }
  }

  func preempted(handle: any RequestHandle) {
    // Its id never left this process: only a bug, or the store's own expiry, gets here.
    request.slot.release()
    handle.respond(
      service.problem(StorageError(.preempted, "spooled body taken over"), requestID: request.requestID))
  }

  /// The pipeline on the worker pool; the spool goes once it answered.
  private func process(handle: any RequestHandle) {
    let service = self.service
    let request = self.request
    let shape = self.shape
    guard let id = created.withLock({ $0 }) else { return }
    service.queued.add(1, ordering: .relaxed)
    let accepted = handle.offload { [self] cancellation in
      service.queued.subtract(1, ordering: .relaxed)
      defer {
        discard()
        request.slot.release()
      }
      guard !cancellation.isCancelled else { return UploadConsumer.abandoned }
      let pipelineCancellation = PipelineCancellation()
      cancellation.onCancel { pipelineCancellation.cancel() }
      do {
        return try service.completeUpload(
          tenant: request.principal.tenant, id: id, shape: shape, request: request, record: false,
          cancellation: pipelineCancellation)
      } catch {
        return service.problem(error, requestID: request.requestID)
      }
    }
    if !accepted {
      service.queued.subtract(1, ordering: .relaxed)
      service.metrics.recordRejection(code: "overloaded")
      service.uploads.submit { [self] in discard() }
      request.slot.release()
    }
  }

  /// Deletes the upload and its spool file (blocking: I/O pool or worker thread).
  private func discard() {
    guard let id = created.withLock({ $0 }) else { return }
    do {
      try service.uploads.store.cancel(tenant: tenant, id: id)
    } catch {
      // It expires and is swept: the lifetime is short.
      service.eventLog.warning(
        "spooled body not deleted",
        fields: [("request_id", request.requestID), ("detail", String(describing: error))])
    }
  }
}
