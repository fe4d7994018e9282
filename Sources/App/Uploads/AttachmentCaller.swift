import HTTP
import ImagePipeline
import Server
import Synchronization
import Uploads

/// An upload route's caller as the App knows it: who (authenticated once, for the whole
/// request), and which model profiles its upload is made for.
struct AttachmentCaller: Sendable {
  var principal: Principal
  /// Model profiles whose renditions are made with the upload (never `default`).
  var profiles: [ModelProfile] = []
  /// The profile the answer's record describes at its top level.
  var describedProfile: ModelProfile = .default

  /// The caller of an upload asking for `requested`: the record describes the first asked for,
  /// else the tenant's default; the tenant's default is made too, so that the plain `url` needs
  /// no second pass. A request that asks for none (a tus append, a completion after the
  /// creating request, whose query is not this request's) gets the tenant's default alone;
  /// another profile is one `/meta?profile=` away.
  init(principal: Principal, requested: [ModelProfile] = [], options: ProfileOptions) {
    self.principal = principal
    let tenantDefault = options.defaultProfile(for: principal.tenant)
    profiles = (requested + [tenantDefault]).filter { $0 != .default }.uniqued()
    describedProfile = requested.first ?? tenantDefault
  }
}

extension AttachmentService {
  /// `caller` as the upload layer sees it, its uploads going into this service.
  func uploadCaller(_ caller: AttachmentCaller) -> UploadCaller {
    UploadCaller(
      tenant: caller.principal.tenant, user: caller.principal.user,
      maxBytes: access.maxUploadBytes(for: caller.principal, serverLimit: options.maxTransferBytes),
      overMaxBytes: AccessError.token(.maxBytesExceeded),
      destination: AttachmentDestination(service: self, caller: caller))
  }
}

/// Where one caller's completed uploads go: this service's pipeline and store.
struct AttachmentDestination: UploadDestination {
  let service: AttachmentService
  let caller: AttachmentCaller

  func process(_ upload: ReceivedUpload, cancellation: RequestCancellation) -> UploadAnswer {
    let outcome = service.process(upload, as: caller, cancellation: cancellation)
    return service.answer(outcome, describing: caller.describedProfile, requestID: upload.requestID)
  }

  func record(ofAttachment id: String, requestID: String) -> HTTPResponse {
    service.metaResponse(
      tenant: caller.principal.tenant, viewer: caller.principal.viewer, id: id, profile: nil,
      requestID: requestID)
  }

  func uploadSlot() -> any UploadSlot {
    AttachmentUploadSlot(access: service.access, metrics: service.metrics, principal: caller.principal)
  }
}

/// A caller's place under its cap on uploads in flight (`AccessControl.beginUpload`); the
/// request that holds it gives it back when it is over.
final class AttachmentUploadSlot: UploadSlot {
  private let access: AccessControl
  private let metrics: AttachdMetrics
  private let principal: Principal
  private let taken = Atomic<Bool>(false)

  init(access: AccessControl, metrics: AttachdMetrics, principal: Principal) {
    self.access = access
    self.metrics = metrics
    self.principal = principal
  }

  func acquire() -> (any Error)? {
    if case .failure(let error) = access.beginUpload(for: principal) { return error }
    taken.store(true, ordering: .releasing)
    metrics.uploadsInFlight.increment()
    return nil
  }

  func release() {
    guard taken.exchange(false, ordering: .acquiringAndReleasing) else { return }
    access.endUpload(for: principal)
    metrics.uploadsInFlight.decrement()
  }
}

/// The App's side of the upload layer that does not depend on the caller: the error table, the
/// counters, the event log, the attachments' URL space.
struct AttachmentUploadHost: UploadHost {
  let metrics: AttachdMetrics
  let eventLog: EventLog
  /// Told when an answer says the data directory's volume is full (`/readyz`); nil when a
  /// full disk may be another server's.
  let volume: VolumeSpace?

  func publicError(for error: any Error) -> PublicError { ErrorTable.publicError(for: error) }

  func problemResponse(_ entry: PublicError, for error: any Error, requestID: String) -> HTTPResponse {
    ErrorTable.problemResponse(
      entry, for: error, requestID: requestID, log: eventLog, metrics: metrics, volume: volume)
  }

  func bodyBytesReceived(_ count: Int) { metrics.httpRequestBytes.increment(by: UInt64(count)) }

  func attachmentPath(_ id: String) -> String { Application.attachmentsPath + "/" + id }

  func warning(_ message: String, fields: [(String, String)]) { eventLog.warning(message, fields: fields) }

  func storageFailed(_ message: String, requestID: String, error: any Error) {
    eventLog.error(message, requestID: requestID, code: "storage_error", detail: String(describing: error))
  }
}
