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
    case upload
    case image
    case meta
    case delete

    /// The path template, for metrics labels (never the raw path).
    public var template: String {
      switch self {
      case .healthz: "/healthz"
      case .readyz: "/readyz"
      case .metrics: "/metrics"
      case .upload: Application.attachmentsPath
      case .image, .delete: Application.attachmentsPath + "/{id}"
      case .meta: Application.attachmentsPath + "/{id}/meta"
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
  /// True when storage failed to open because a backend could not be reached (worth a retry).
  public let storageUnavailable: Bool
  /// The stores (attachments, uploads, readiness probe); nil when they could not be opened.
  public let backends: StorageBackends?
  let sweeper: Sweeper?
  let router: Router<Route>
  let requestIDs = RequestIDs()

  /// The routing table.
  static func makeRouter() -> Router<Route> {
    var router = Router<Route>()
    router.add("GET", "/healthz", .healthz)
    router.add("GET", "/readyz", .readyz)
    router.add("GET", "/metrics", .metrics)
    router.add("POST", attachmentsPath, .upload)
    router.add("GET", attachmentsPath + "/{id}", .image)
    router.add("DELETE", attachmentsPath + "/{id}", .delete)
    router.add("GET", attachmentsPath + "/{id}/meta", .meta)
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
      for (tenant, seconds) in options.tenantRetention.sorted(by: { $0.key < $1.key }) {
        try store.setRetention(TimeInterval(seconds), tenant: tenant)
      }
      let pipeline = try Pipeline(configuration: options.pipelineConfiguration())
      let service = AttachmentService(
        store: store, pipeline: pipeline, access: control, metrics: metrics, options: options,
        eventLog: eventLog)
      attachments = service
      self.backends = backends
      sweeper = Sweeper(
        store: store, uploads: backends.uploads, interval: Double(options.sweepInterval), eventLog: eventLog)
      storageFailure = nil
      storageUnavailable = false
      metrics.registry.onCollect { [weak service] in service?.refreshGauges() }
    } catch {
      attachments = nil
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
    let match = router.match(method: head.method, path: head.path)
    if case .found(let route, _) = match {
      context.route = route.template
    } else {
      context.route = Self.unmatchedRoute
    }
    if case .found(let route, let parameters) = match,
      route == .upload || route == .image || route == .meta
        || route == .delete
    {
      guard let attachments else {
        return .respond(
          ErrorTable.response(
            for: AppError.notReady(reason: storageFailure ?? "storage"), requestID: context.requestID,
            log: eventLog))
      }
      let id = parameters["id"] ?? ""
      switch route {
      case .upload: return attachments.uploadHead(head, context: context)
      case .image: return attachments.image(head, id: id, context: context)
      case .meta: return attachments.meta(head, id: id, context: context)
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
    case .methodNotAllowed(let allow):
      return .respond(
        ErrorTable.response(for: AppError.methodNotAllowed(allow: allow), requestID: requestID, log: nil))
    case .found, .notFound:
      return .respond(ErrorTable.response(for: AppError.notFound, requestID: requestID, log: nil))
    }
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

  /// The `route` label of requests no route matched (and of those refused before a head).
  static let unmatchedRoute = "unmatched"

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

  /// Starts the retention sweeper (`makeServer` does this).
  public func startBackgroundWork() { sweeper?.start() }

  /// Stops the sweeper; call once the server has stopped.
  public func stopBackgroundWork() { sweeper?.stop() }

  static func json(status: Int, _ text: StaticString) -> HTTPResponse {
    let body = text.withUTF8Buffer { Array($0) + [0x0A] }
    return HTTPResponse(
      status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
      body: .bytes(body))
  }
}
