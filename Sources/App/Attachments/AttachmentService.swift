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
    options: Application.AttachmentOptions, eventLog: EventLog
  ) {
    self.store = store
    self.pipeline = pipeline
    self.access = access
    self.metrics = metrics
    self.options = options
    self.eventLog = eventLog
  }

  // MARK: - Upload

  /// Decides an upload from its head: key, scope, rate, idempotency key, size, multipart
  /// boundary and the upload cap, in that order; then reads the body.
  func uploadHead(_ head: HTTPRequestHead, context: RequestContext) -> HeadDecision {
    let principal: Principal
    switch access.authorize(head, scope: .upload) {
    case .failure(let error): return .respond(problem(error, context))
    case .success(let p): principal = p
    }
    let requested: [ModelProfile]
    switch ProfileQuery.profiles(in: head.query) {
    case .failure(let error): return .respond(problem(error, context))
    case .success(let profiles): requested = profiles
    }
    let sentKey = head.headers.first(name: "Idempotency-Key")
    if let sentKey, !(1...255).contains(sentKey.utf8.count) {
      return .respond(problem(AppError.invalidIdempotencyKey, context))
    }
    // A token user's keys are their own: two users of one tenant sending the same key must
    // never get each other's answer. Neither a header value nor a `sub` holds a line break,
    // so `user \n key` cannot meet a tenant key's plain one.
    let idempotencyKey = sentKey.map { key in principal.user.map { $0 + "\n" + key } ?? key }
    var boundary: String?
    if let type = head.headers.first(name: "Content-Type"), type.lowercased().hasPrefix("multipart/") {
      guard let found = MultipartParser.boundary(fromContentType: type) else {
        return .respond(problem(AppError.malformedUpload("multipart without a form-data boundary"), context))
      }
      boundary = found
    }
    var expected: Int?
    // A token's max_bytes caps a raw body as it arrives; a multipart body (boundaries and
    // fields besides the files) is judged on its file parts once they are in.
    let bodyLimit =
      boundary == nil
      ? access.maxUploadBytes(for: principal, serverLimit: options.maxUploadBytes) : options.maxUploadBytes
    let overLimit: any Error =
      bodyLimit < options.maxUploadBytes ? AccessError.token(.maxBytesExceeded) : AppError.uploadTooLarge
    switch head.framing {
    case .none: return .respond(problem(AppError.emptyUpload, context))
    case .contentLength(let length):
      if length == 0 { return .respond(problem(AppError.emptyUpload, context)) }
      if length > UInt64(bodyLimit) { return .respond(problem(overLimit, context)) }
      expected = Int(length)
    case .chunked: break
    }
    if case .failure(let error) = access.beginUpload(for: principal) {
      return .respond(problem(error, context))
    }
    metrics.uploadsInFlight.increment()
    let slot = UploadSlot(service: self, principal: principal)
    if let idempotencyKey {
      // A retry while the first request is still sending its body: answer at once (the
      // index claim, which needs the body's fingerprint, covers the rest).
      let name = principal.tenant + "\n" + idempotencyKey
      guard keysInFlight.withLock({ $0.insert(name).inserted }) else {
        slot.release()
        return .respond(problem(AppError.idempotencyInProgress, context))
      }
      slot.ownKey(name)
    }
    // The profile the record describes: the first asked for, else the tenant's default; the
    // tenant's default is made too, so that the plain `url` needs no second pass.
    let tenantDefault = options.profiles.defaultProfile(for: principal.tenant)
    let request = UploadRequest(
      principal: principal, idempotencyKey: idempotencyKey, requestID: context.requestID, slot: slot,
      maxBodyBytes: bodyLimit, overLimit: overLimit,
      profiles: (requested + [tenantDefault]).filter { $0 != .default }.uniqued(),
      describedProfile: requested.first ?? tenantDefault)
    do {
      return .readBody(
        try UploadConsumer(service: self, request: request, boundary: boundary, expectedBytes: expected))
    } catch {
      slot.release()
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
          upload.parts.first ?? [], request: upload.request, cancellation: cancellation, failed: &failed)
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
    _ bytes: [UInt8], request: UploadRequest, cancellation: PipelineCancellation, failed: inout UsageAmount
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
    _ parts: [[UInt8]], request: UploadRequest, cancellation: PipelineCancellation, failed: inout UsageAmount
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
    _ bytes: [UInt8], request: UploadRequest, cancellation: PipelineCancellation
  ) -> Result<StoredAttachment, any Error> {
    let requestID = request.requestID
    do {
      let image = try pipeline.process(bytes, profiles: request.profiles, cancellation: cancellation)
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
  var parts: [[UInt8]]
  /// SHA-256 of the raw body, hashed while it arrived (multipart), else nil.
  var bodyDigest: String?

  /// The body's SHA-256 in hex (hashed now for a raw body).
  func fingerprint() -> String {
    if let bodyDigest { return bodyDigest }
    return Hex.encode(SHA256.hash(parts.first ?? []))
  }
}
