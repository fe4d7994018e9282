import Foundation
import HTTP
import ImagePipeline
import Server
import Storage

/// attachd's request handler: routes requests, answers health checks, and turns every error
/// into problem+json through `ErrorTable`.
public final class Application: HTTPHandler {
  /// The routes attachd answers.
  public enum Route: Sendable, Equatable {
    case healthz
    case readyz
    case metrics
    case openAPI
    case upload
    case image
    case meta
    case delete
    /// `/v1/uploads/{id}`: a resumable upload (HEAD, GET, PATCH, DELETE, OPTIONS).
    case uploadResource
    /// `OPTIONS /v1/attachments`: what uploads may do here.
    case uploadOptions
    /// `/v1/tus`: tus creation (POST) and discovery (OPTIONS).
    case tusCreation
    /// `/v1/tus/{id}`: one tus upload (HEAD, GET, PATCH, DELETE, OPTIONS).
    case tusUpload

    /// The path template, for metrics labels (never the raw path).
    public var template: String {
      switch self {
      case .healthz: "/healthz"
      case .readyz: "/readyz"
      case .metrics: "/metrics"
      case .openAPI: "/openapi.json"
      case .upload, .uploadOptions: Application.attachmentsPath
      case .uploadResource: AttachmentService.uploadsPath + "/{id}"
      case .image, .delete: Application.attachmentsPath + "/{id}"
      case .meta: Application.attachmentsPath + "/{id}/meta"
      case .tusCreation: TusProtocol.path
      case .tusUpload: TusProtocol.path + "/{id}"
      }
    }
  }

  /// The version `attachd --version` prints.
  public static let version = "0.1.0"
  /// Where attachments live in the URL space.
  public static let attachmentsPath = "/v1/attachments"

  public let configuration: Configuration
  public let readiness: Readiness
  public let accessLog: AccessLog
  public let eventLog: EventLog
  public let metrics: AttachdMetrics
  /// The attachments API; nil when storage could not be opened (see `storageFailure`).
  public let attachments: AttachmentService?
  /// Why storage could not be opened, when it could not.
  public let storageFailure: String?
  /// tus 1.0 at `/v1/tus`; nil when storage could not be opened.
  let tus: TusService?
  /// True when storage failed to open because a backend could not be reached (worth a retry).
  public let storageUnavailable: Bool
  /// The stores (attachments, uploads, readiness probe); nil when they could not be opened.
  public let backends: StorageBackends?
  let sweeper: Sweeper?
  let router: Router<Route>
  let requestIDs = RequestIDs()
  /// Which browser origins may call attachd (`cors.*`).
  let cors: CORSPolicy

  /// The routing table.
  static func makeRouter() -> Router<Route> {
    var router = Router<Route>()
    router.add("GET", "/healthz", .healthz)
    router.add("GET", "/readyz", .readyz)
    router.add("GET", "/metrics", .metrics)
    router.add("GET", "/openapi.json", .openAPI)
    router.add("POST", attachmentsPath, .upload)
    router.add("GET", attachmentsPath + "/{id}", .image)
    router.add("DELETE", attachmentsPath + "/{id}", .delete)
    router.add("GET", attachmentsPath + "/{id}/meta", .meta)
    router.add("OPTIONS", attachmentsPath, .uploadOptions)
    for method in ["GET", "PATCH", "DELETE", "OPTIONS"] {
      router.add(method, AttachmentService.uploadsPath + "/{id}", .uploadResource)
    }
    for method in TusService.collectionMethods { router.add(method, TusProtocol.path, .tusCreation) }
    for method in TusService.uploadMethods { router.add(method, TusProtocol.path + "/{id}", .tusUpload) }
    return router
  }

  /// Opens storage under `storage.dataDir` (cleaning temp files a crash left) and builds the
  /// access checks, pipeline and metrics. A storage failure is kept in `storageFailure`.
  public init(configuration: Configuration, accessLog: AccessLog, eventLog: EventLog) {
    self.configuration = configuration
    self.accessLog = accessLog
    self.eventLog = eventLog
    self.readiness = Readiness(dataDirectory: configuration.storage.dataDirectory)
    self.router = Self.makeRouter()
    self.cors = CORSPolicy(configuration: configuration.cors)
    let metrics = AttachdMetrics()
    self.metrics = metrics
    var access = AccessControl.Configuration()
    access.auth = configuration.auth
    access.rateLimit = configuration.limits.rate
    access.uploads = configuration.limits.uploads
    access.userRateLimit = configuration.limits.userRate
    access.userUploads = configuration.limits.userUploads
    access.usage = configuration.limits.userQuota
    access.signedLinks = configuration.signing
    let control = AccessControl(configuration: access, warn: { eventLog.warning($0) })
    let options = configuration.attachments
    do {
      // `attachd serve` creates the data directory; a missing one is a failure, not a mkdir.
      var isDirectory: ObjCBool = false
      guard
        FileManager.default.fileExists(
          atPath: configuration.storage.dataDirectory, isDirectory: &isDirectory),
        isDirectory.boolValue
      else {
        throw AppError.notReady(reason: "data directory \(configuration.storage.dataDirectory) is missing")
      }
      let backends = try StorageBackends.open(
        configuration, node: StorageBackends.nodeName(port: configuration.server.port))
      let store = backends.attachments
      let directory = configuration.storage.dataDirectory
      Self.logRecovery(backends.recovery, eventLog: eventLog)
      for (tenant, seconds) in options.tenantRetention.sorted(by: { $0.key < $1.key }) {
        try store.setRetention(TimeInterval(seconds), tenant: tenant)
      }
      let pipeline = try Pipeline(configuration: options.pipelineConfiguration())
      let engine = UploadEngine(store: backends.uploads, options: configuration.uploads)
      let service = AttachmentService(
        store: store, pipeline: pipeline, access: control, metrics: metrics, options: options,
        uploads: engine, eventLog: eventLog)
      let tusService = try TusService(attachments: service, scratchDirectory: directory)
      attachments = service
      tus = tusService
      self.backends = backends
      sweeper = Sweeper(
        store: store, uploads: backends.uploads, interval: Double(options.sweepInterval), eventLog: eventLog)
      storageFailure = nil
      storageUnavailable = false
      metrics.registry.onCollect { [weak service] in service?.refreshGauges() }
    } catch {
      attachments = nil
      tus = nil
      backends = nil
      sweeper = nil
      storageFailure = String(describing: error)
      storageUnavailable = (error as? StorageError)?.code == .unavailable
    }
  }

  /// Labels the request (its id, on the response too, and its route template for metrics),
  /// then routes it. Reads and deletes authenticate here, on the event loop, and are answered at
  /// once when refused; whatever touches the disk is offloaded to the worker pool.
  public func head(_ head: HTTPRequestHead, context: inout RequestContext) -> HeadDecision {
    RequestIDs.label(&context, id: requestIDs.id(for: head))
    // Before routing and authentication: a preflight carries no credentials.
    if let preflight = cors.preflight(head) {
      context.route = Self.preflightRoute
      return .respond(preflight)
    }
    cors.label(&context, head) { [attachments] in
      let result = attachments?.access.authenticator.authenticate(
        authorizationHeader: head.headers.first(name: "Authorization"))
      guard case .ok(let principal) = result else { return nil }
      return principal.tenant
    }
    var method = head.method
    let isTus = head.path == TusProtocol.path || head.path.hasPrefix(TusProtocol.path + "/")
    if isTus {
      // Every tus answer carries Tus-Resumable, the server's own (408, 503 …) and 404/405 too.
      for (name, value) in TusProtocol.responseHeaders {
        context.responseHeaders.add(name: name, value: value)
      }
      method = TusProtocol.method(of: head)
    }
    let match = router.match(method: method, path: head.path)
    if isTus, case .found(let route, let parameters) = match {
      context.route = route.template
      guard let tus else { return storageNotOpen(context) }
      return tus.head(head, method: method, id: parameters["id"], context: context)
    }
    if case .found(.upload, _) = match, head.headers.contains(name: "Tus-Resumable") {
      // A tus client pointed at the attachments URL: tus wins over the other upload protocols
      // when it says so, and the upload lives under /v1/tus like any other.
      context.route = Route.tusCreation.template
      for (name, value) in TusProtocol.responseHeaders {
        context.responseHeaders.add(name: name, value: value)
      }
      guard let tus else { return storageNotOpen(context) }
      return tus.head(head, method: TusProtocol.method(of: head), id: nil, context: context)
    }
    if case .found(let route, _) = match {
      context.route = route.template
    } else {
      context.route = Self.unmatchedRoute
    }
    if case .found(let route, let parameters) = match,
      [.upload, .image, .meta, .delete, .uploadResource, .uploadOptions].contains(route)
    {
      guard let attachments else { return storageNotOpen(context) }
      let id = parameters["id"] ?? ""
      switch route {
      case .upload: return attachments.uploadHead(head, context: context)
      case .image: return attachments.image(head, id: id, context: context)
      case .meta: return attachments.meta(head, id: id, context: context)
      case .uploadResource: return attachments.uploadResource(head, id: id, context: context)
      case .uploadOptions:
        return attachments.resumableOptions(head, fields: ResumableFields(head), context: context)
      default: return attachments.delete(head, id: id, context: context)
      }
    }
    let requestID = context.requestID
    switch match {
    case .found(.healthz, _):
      return .respond(Self.healthy)
    case .found(.readyz, _):
      // The probes write files: off the event loop (a body sent with it is never read).
      return .offload { [self] _ in readinessResponse(requestID: requestID) }
    case .found(.metrics, _):
      return .respond(
        HTTPResponse(
          status: 200, headers: ["Content-Type": MetricsRegistry.contentType, "Cache-Control": "no-store"],
          body: .bytes(Array(metrics.render().utf8))))
    case .found(.openAPI, _):
      return .respond(Self.openAPI)
    case .methodNotAllowed(let allow):
      return .respond(
        ErrorTable.response(for: AppError.methodNotAllowed(allow: allow), requestID: requestID, log: nil))
    case .found, .notFound:
      return .respond(ErrorTable.response(for: AppError.notFound, requestID: requestID, log: nil))
    }
  }

  /// 503 `not_ready` for a route that needs the storage that could not be opened.
  func storageNotOpen(_ context: RequestContext) -> HeadDecision {
    .respond(
      ErrorTable.response(
        for: AppError.notReady(reason: storageFailure ?? "storage"), requestID: context.requestID,
        log: eventLog))
  }

  /// 200 when ready (data directory and the storage backends writable, not draining), else
  /// 503 problem+json with `Retry-After`. The backends' answer is cached briefly
  /// (`StorageProbe`), so it follows a backend going down or coming back within seconds.
  func readinessResponse(requestID: String) -> HTTPResponse {
    var problem = readiness.check()
    if problem == nil {
      if let backends {
        if let reason = backends.probe.problem() { problem = .notReady(reason: reason) }
      } else {
        problem = .notReady(reason: storageFailure ?? "storage is not open")
      }
    }
    guard let problem else { return Self.ready }
    if case .notReady(let reason) = problem {
      eventLog.warning("not ready", fields: [("request_id", requestID), ("reason", reason)])
    }
    return ErrorTable.response(for: problem, requestID: requestID, log: nil)
  }

  // Built once: /healthz is what load balancers and benchmarks hit most.
  static let healthy = json(status: 200, #"{"status":"ok"}"#)
  static let ready = json(status: 200, #"{"status":"ready"}"#)
  /// `Sources/App/OpenAPI/openapi.json`, compiled in.
  static let openAPI = HTTPResponse(
    status: 200, headers: ["Content-Type": "application/json", "Cache-Control": "no-cache"],
    body: .bytes(PackageResources.openapi_json))

  /// The `route` label of requests no route matched (and of those refused before a head).
  static let unmatchedRoute = "unmatched"
  /// The `route` label of CORS preflights (answered before routing).
  static let preflightRoute = "preflight"

  /// One access-log line and the request metrics for every request the server finished,
  /// labelled when its head was decided (the router does not run again).
  public func completed(_ request: CompletedRequest) {
    // A refused connection carries no id: the log line still gets one.
    let requestID = request.requestID.isEmpty ? requestIDs.fresh() : request.requestID
    accessLog.record(request, requestID: requestID)
    // A request that ended before its answer was written whole is logged with status 0, and
    // not counted by status.
    guard request.isComplete, request.status > 0 else { return }
    metrics.recordRequest(
      route: request.route.isEmpty ? Self.unmatchedRoute : request.route, method: request.method,
      status: request.status, requestBytes: 0, responseBytes: Int(clamping: request.bytesOut))
  }

  /// Starts the retention sweeper and the upload commit timer (`makeServer` does this).
  public func startBackgroundWork() {
    sweeper?.start()
    attachments?.uploads.start()
  }

  /// Stops the sweeper and the upload engine's threads; call once the server has stopped.
  public func stopBackgroundWork() {
    sweeper?.stop()
    attachments?.uploads.stop()
  }

  /// One event-log line when opening the upload store repaired something a crash left.
  static func logRecovery(_ recovery: FileUploadStore.Recovery, eventLog: EventLog) {
    guard recovery != FileUploadStore.Recovery() else { return }
    eventLog.info(
      "upload store recovered",
      fields: [
        ("removed_files", String(recovery.removedFiles)),
        ("truncated_files", String(recovery.truncatedFiles)),
        ("lowered_offsets", String(recovery.loweredOffsets)),
        ("released_leases", String(recovery.releasedLeases)),
      ])
  }

  static func json(status: Int, _ text: StaticString) -> HTTPResponse {
    let body = text.withUTF8Buffer { Array($0) + [0x0A] }
    return HTTPResponse(
      status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
      body: .bytes(body))
  }
}
