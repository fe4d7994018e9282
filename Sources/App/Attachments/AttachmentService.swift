import Crypto
import Foundation
import HTTP
import ImagePipeline
import Server
import Storage
import Synchronization

/// The attachments API: uploads through the pipeline into the store, reads, deletes, signed
/// links, and the numbers `/metrics` shows.
///
/// Upload head decisions run on an event loop and only look at headers; index look-ups,
/// decoding, storing and deleting run on the worker pool (the file itself is sent with
/// `sendfile` by the loop).
public final class AttachmentService: Sendable {
  public let store: AttachmentStore
  public let pipeline: Pipeline
  public let access: AccessControl
  public let metrics: AttachdMetrics
  public let options: Application.AttachmentOptions
  /// The upload engine: spooled plain bodies and resumable uploads.
  public let uploads: UploadEngine
  let eventLog: EventLog
  /// Jobs handed to the worker pool and not yet started.
  let queued = Atomic<Int>(0)
  /// `tenant \n key` of idempotent uploads whose body is still arriving or being processed.
  let keysInFlight = Mutex<Set<String>>([])
  private let statisticsCache = Mutex<(at: Date, value: IndexStatistics)?>(nil)

  /// Seconds `/metrics` reuses storage counts before asking the index again.
  static let statisticsLifetime: TimeInterval = 5

  public init(
    store: AttachmentStore, pipeline: Pipeline, access: AccessControl, metrics: AttachdMetrics,
    options: Application.AttachmentOptions, uploads: UploadEngine, eventLog: EventLog
  ) {
    self.store = store
    self.pipeline = pipeline
    self.access = access
    self.metrics = metrics
    self.options = options
    self.uploads = uploads
    self.eventLog = eventLog
  }

  // MARK: - Upload

  /// Decides an upload from its head: key, scope, rate, idempotency key, size, multipart
  /// boundary and the upload cap, in that order (`admit`); then reads the body. A request that
  /// offers a resumable upload (`Upload-Draft-Interop-Version` and completeness) creates one.
  func uploadHead(_ head: HTTPRequestHead, context: RequestContext) -> HeadDecision {
    if let resumable = ResumableFields(head), resumable.complete != nil {
      return resumableCreation(head, fields: resumable, context: context)
    }
    let admission: UploadAdmission
    switch admit(head, context: context) {
    case .refused(let response): return .respond(response)
    case .admitted(let admitted): admission = admitted
    }
    do {
      return .readBody(
        try UploadConsumer(
          service: self, request: admission.request, boundary: admission.boundary,
          expectedBytes: admission.expectedBytes))
    } catch {
      admission.request.slot.release()
      return .respond(problem(error, context))
    }
  }

  /// Runs an upload's images through the pipeline and the store (on a worker thread); the
  /// pipeline stops between steps and tiles once `cancellation` is cancelled (the client left).
  func process(_ upload: ReceivedUpload, cancellation: PipelineCancellation = PipelineCancellation())
    -> HTTPResponse
  {
    let tenant = upload.request.principal.tenant
    let requestID = upload.request.requestID
    var claimed: String?
    if let key = upload.request.idempotencyKey {
      do {
        switch try store.beginIdempotent(tenant: tenant, key: key, fingerprint: upload.fingerprint()) {
        case .started: claimed = key
        case .inProgress: return problem(AppError.idempotencyInProgress, requestID: requestID)
        case .mismatch: return problem(AppError.idempotencyMismatch, requestID: requestID)
        case .completed(let stored): return Self.replay(stored)
        }
      } catch {
        return problem(error, requestID: requestID)
      }
    }
    let response: HTTPResponse
    switch reserveUsage(upload) {
    case .failure(let failure):
      if let key = claimed { try? store.abandonIdempotent(tenant: tenant, key: key) }
      return failure.response
    case .success(let hold):
      var failed = UsageAmount.zero
      response =
        upload.multipart
        ? multipartResponse(
          upload.parts, request: upload.request, cancellation: cancellation, failed: &failed)
        : singleResponse(
          upload.parts.first ?? ImageBytes([]), request: upload.request, cancellation: cancellation,
          failed: &failed)
      giveBack(failed, of: hold, requestID: requestID)
    }
    if let key = claimed {
      do {
        // Client errors are repeated like successes; a 5xx may succeed on retry.
        guard response.status < 500, case .bytes(let body) = response.body else {
          try store.abandonIdempotent(tenant: tenant, key: key)
          return response
        }
        var headers: [String: String] = [:]
        for name in ["Content-Type", "Location"] { headers[name] = response.headers.first(name: name) }
        try store.completeIdempotent(
          tenant: tenant, key: key,
          response: StoredResponse(status: response.status, headers: headers, body: body))
      } catch {
        try? store.abandonIdempotent(tenant: tenant, key: key)
        eventLog.error(
          "idempotency answer not stored", requestID: requestID, code: "storage_error",
          detail: String(describing: error))
      }
    }
    return response
  }

  static func replay(_ stored: StoredResponse) -> HTTPResponse {
    var headers = HTTPHeaders()
    for (name, value) in stored.headers.sorted(by: { $0.key < $1.key }) {
      headers.add(name: name, value: value)
    }
    headers.add(name: "Cache-Control", value: "no-store")
    headers.add(name: "Idempotent-Replayed", value: "true")
    return HTTPResponse(status: stored.status, headers: headers, body: .bytes(stored.body))
  }

  private func singleResponse(
    _ bytes: ImageBytes, request: UploadRequest, cancellation: PipelineCancellation, failed: inout UsageAmount
  ) -> HTTPResponse {
    switch processOne(bytes, request: request, cancellation: cancellation) {
    case .failure(let error):
      failed = UsageAmount(files: 1, bytes: bytes.count)
      return problem(error, requestID: request.requestID)
    case .success(let stored):
      let body = AttachmentJSON.record(
        view(stored.record, stored.renditions, profile: request.describedProfile))
      return HTTPResponse(
        status: 201,
        headers: [
          "Content-Type": "application/json",
          "Location": options.link(Application.attachmentsPath + "/" + stored.record.id),
          "Cache-Control": "no-store",
        ], body: .bytes(body))
    }
  }

  /// 201 with a list when at least one part was stored (failed parts as problem objects with
  /// their `part` index); when every part failed, the first failure's problem.
  private func multipartResponse(
    _ parts: [ImageBytes], request: UploadRequest, cancellation: PipelineCancellation,
    failed: inout UsageAmount
  ) -> HTTPResponse {
    let requestID = request.requestID
    var out: [UInt8] = [UInt8(ascii: "[")]
    var firstFailure: (any Error)?
    var firstLocation: String?
    for (index, part) in parts.enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      switch processOne(part, request: request, cancellation: cancellation) {
      case .success(let stored):
        firstLocation = firstLocation ?? options.link(Application.attachmentsPath + "/" + stored.record.id)
        AttachmentJSON.record(
          view(stored.record, stored.renditions, profile: request.describedProfile), into: &out)
      case .failure(let error):
        failed.files += 1
        failed.bytes += part.count
        firstFailure = firstFailure ?? error
        let entry = ErrorTable.publicError(for: error)
        metrics.recordRejection(code: entry.code)
        AttachmentJSON.partError(entry, part: index, into: &out)
      }
    }
    out.append(contentsOf: "]\n".utf8)
    guard let firstLocation else {
      return problem(firstFailure ?? AppError.malformedUpload("no file part"), requestID: requestID)
    }
    return HTTPResponse(
      status: 201,
      headers: ["Content-Type": "application/json", "Location": firstLocation, "Cache-Control": "no-store"],
      body: .bytes(out))
  }

  /// Pipeline, then store (the image, then the renditions the request asked for); errors are
  /// returned, not thrown, so a multipart upload goes on. A run stopped by its deadline or
  /// `cancellation` stores nothing.
  private func processOne(
    _ bytes: ImageBytes, request: UploadRequest, cancellation: PipelineCancellation
  ) -> Result<StoredAttachment, any Error> {
    let requestID = request.requestID
    do {
      let image = try bytes.withUnsafeBytes {
        try pipeline.process($0, profiles: request.profiles, cancellation: cancellation)
      }
      for timing in image.timings {
        let (seconds, attoseconds) = timing.duration.components
        metrics.recordStage(timing.stage, seconds: Double(seconds) + Double(attoseconds) * 1e-18)
      }
      metrics.recordInputFormat(image.source.format)
      let source = Storage.SourceInfo(
        format: image.source.format, width: image.source.width, height: image.source.height,
        bytes: image.source.bytes, orientation: image.source.orientation,
        orientationSource: image.source.orientationSource.rawValue, colourProfile: image.source.colourProfile)
      let record = try store.store(
        tenant: request.principal.tenant, owner: request.principal.user, bytes: image.jpeg,
        width: image.width,
        height: image.height, source: source)
      return .success(
        StoredAttachment(record: record, renditions: try storeRenditions(image.renditions, of: record)))
    } catch let error as PipelineError {
      // The library's words go to the event log only; never the file name or any bytes.
      eventLog.info(
        "image refused",
        fields: [("request_id", requestID), ("code", error.code), ("detail", error.description)])
      return .failure(error)
    } catch {
      return .failure(error)
    }
  }

  func signedURL(for record: AttachmentRecord) -> String {
    access.signer.make(id: record.id, tenant: record.tenant, now: Int(store.now.timeIntervalSince1970)).path
  }

  /// What a record shows: its renditions, `profile` at the top level, links as configured.
  ///
  /// A profile whose rendition could not be stored with the upload (logged; the next request
  /// for it makes it) is not described at the top level: the stored image is, as `default`.
  func view(_ record: AttachmentRecord, _ renditions: [String: Rendition], profile: ModelProfile)
    -> RecordView
  {
    let stored = (record.width, record.height)
    let missing =
      renditions[profile.rawValue] == nil && profile.size(ofStored: record.width, record.height) != stored
    return RecordView(
      record: record, renditions: renditions, profile: missing ? .default : profile,
      tenantDefault: options.profiles.defaultProfile(for: record.tenant), baseURL: options.publicBaseURL,
      signedPath: signedURL(for: record))
  }

  // MARK: - Problems

  /// The problem response for `error`, counted by code; 5xx details go to the event log.
  func problem(_ error: any Error, requestID: String) -> HTTPResponse {
    let response = ErrorTable.response(for: error, requestID: requestID, log: eventLog)
    metrics.recordRejection(code: ErrorTable.publicError(for: error).code)
    return response
  }

  func problem(_ error: any Error, _ context: RequestContext) -> HTTPResponse {
    problem(error, requestID: context.requestID)
  }

  // MARK: - Metrics

  /// Sets the gauges read at scrape time; storage counts are cached for a few seconds.
  func refreshGauges() {
    metrics.workerQueueDepth.set(max(0, queued.load(ordering: .relaxed)))
    metrics.memoryBudgetBytesInUse.set(pipeline.configuration.memoryBudget.inUse)
    let now = Date()
    let cached = statisticsCache.withLock { cache -> IndexStatistics? in
      guard let cache, now.timeIntervalSince(cache.at) < Self.statisticsLifetime else { return nil }
      return cache.value
    }
    if let statistics = cached ?? (try? store.statistics()) {
      if cached == nil { statisticsCache.withLock { $0 = (now, statistics) } }
      metrics.storedObjects.set(statistics.attachments)
      metrics.storedBytes.set(statistics.blobBytes)
    }
  }
}

/// Who is uploading, and the upload-cap slot to give back exactly once.
struct UploadRequest: Sendable {
  var principal: Principal
  var idempotencyKey: String?
  var requestID: String
  var slot: UploadSlot
  /// The largest body accepted (the server's cap, or a token's smaller `max_bytes`).
  var maxBodyBytes: Int
  /// What a body over `maxBodyBytes` is refused with.
  var overLimit: any Error
  /// Model profiles whose renditions are made with the upload (never `default`).
  var profiles: [ModelProfile] = []
  /// The profile the answer's record describes at its top level.
  var describedProfile: ModelProfile = .default
}

extension UploadRequest {
  /// The request with the profiles an upload asking for `requested` gets: the record describes
  /// the first asked for, else the tenant's default; the tenant's default is made too, so that
  /// the plain `url` needs no second pass.
  func withProfiles(_ requested: [ModelProfile], _ options: ProfileOptions) -> UploadRequest {
    var copy = self
    let tenantDefault = options.defaultProfile(for: principal.tenant)
    copy.profiles = (requested + [tenantDefault]).filter { $0 != .default }.uniqued()
    copy.describedProfile = requested.first ?? tenantDefault
    return copy
  }

  /// The request with the profiles of an upload that asked for none (a tus append or a
  /// completion after the creating request, whose query is not this request's; another profile
  /// is one `/meta?profile=` away).
  func withTenantDefaultProfile(_ options: ProfileOptions) -> UploadRequest {
    withProfiles([], options)
  }
}

/// A stored attachment and the renditions stored with it, by profile name.
struct StoredAttachment {
  var record: AttachmentRecord
  var renditions: [String: Rendition]
}

extension Array where Element: Hashable {
  /// The elements in order, each once.
  func uniqued() -> [Element] {
    var seen = Set<Element>()
    return filter { seen.insert($0).inserted }
  }
}

/// One held upload slot (`AccessControl.beginUpload`), released exactly once.
final class UploadSlot: Sendable {
  private let service: AttachmentService
  private let principal: Principal
  private let released = Atomic<Bool>(false)
  private let key = Mutex<String?>(nil)

  init(service: AttachmentService, principal: Principal) {
    self.service = service
    self.principal = principal
  }

  /// Makes this slot remove `name` from the in-flight idempotency keys on release.
  func ownKey(_ name: String) { key.withLock { $0 = name } }

  func release() {
    guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
    if let name = key.withLock({ $0 }) { _ = service.keysInFlight.withLock { $0.remove(name) } }
    service.access.endUpload(for: principal)
    service.metrics.uploadsInFlight.decrement()
  }
}

/// A whole upload body: the images and, for idempotency, the body's fingerprint.
struct ReceivedUpload: Sendable {
  var request: UploadRequest
  var multipart: Bool
  /// The images: the raw body, or the file parts of a multipart body.
  var parts: [ImageBytes]
  /// SHA-256 of the raw body, hashed while it arrived (multipart held in memory), else nil.
  var bodyDigest: String?
  /// The whole raw body when it was spooled (a multipart body's parts are ranges of it).
  var rawBody: ImageBytes?

  /// The body's SHA-256 in hex (hashed now unless it was hashed while it arrived).
  func fingerprint() -> String {
    if let bodyDigest { return bodyDigest }
    let whole = rawBody ?? parts.first ?? ImageBytes([])
    return whole.withUnsafeBytes { Hex.encode(SHA256.hash($0)) }
  }
}
