import Foundation
import HTTP
import ImagePipeline
import PipelineSandbox
import Sandbox
import Server
import Storage
import Uploads

/// attachd's request handler: labels every request, authenticates it once, routes it through
/// the route table (`Application+Routes.swift`) and turns every error into problem+json through
/// `ErrorTable`.
public final class Application: HTTPHandler {
  /// Why the application could not start.
  public struct StartError: Error, CustomStringConvertible {
    /// What failed (never a credential).
    public var description: String
    /// A storage server could not be reached: worth a restart later (anything else needs a fix).
    public var isUnavailable: Bool
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
  /// The attachments API: what an upload's files become, reads, deletes.
  public let attachments: AttachmentService
  /// The upload layer: plain, IETF resumable and tus uploads on the durable upload engine.
  public let uploads: Uploads
  /// The stores (attachments, uploads, readiness probe).
  public let backends: StorageBackends
  /// The decode sandbox every image goes through (its helper and one child per decode).
  public let sandbox: Sandbox
  let sweeper: Sweeper
  /// Makes video MP4 renditions from the index's job queue.
  let videoJobs: VideoRenditionWorker
  let router: Router<Route>
  let requestIDs = RequestIDs()
  /// Which browser origins may call attachd (`cors.*`).
  let cors: CORSPolicy

  /// Where images are decoded. `serve` always decodes in the sandbox; the in-process choice
  /// exists for the benchmarks that measure what the sandbox costs (`Scripts/bench-load`).
  public enum Decoding: Sendable {
    case sandboxed
    case inProcessForBenchmarks
  }

  /// Opens storage under `storage.dataDir` (cleaning temp files a crash left) and builds the
  /// access checks, pipeline, upload layer and metrics. Throws `StartError` when storage
  /// cannot be opened: a server without its storage has nothing to serve.
  public init(
    configuration: Configuration, accessLog: AccessLog, eventLog: EventLog, decoding: Decoding = .sandboxed
  ) throws {
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
    let directory = configuration.storage.dataDirectory
    do {
      // `attachd serve` creates the data directory; a missing one is a failure, not a mkdir.
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory),
        isDirectory.boolValue
      else { throw AppError.notReady(reason: "data directory \(directory) is missing") }
      let backends = try StorageBackends.open(
        configuration, node: StorageBackends.nodeName(port: configuration.server.port))
      let store = backends.attachments
      Self.logRecovery(backends.recovery, eventLog: eventLog)
      for (tenant, seconds) in options.tenantRetention.sorted(by: { $0.key < $1.key }) {
        try store.setRetention(TimeInterval(seconds), tenant: tenant)
      }
      let sandbox = Sandbox(configuration: configuration.sandbox.sandboxConfiguration()) { line in
        eventLog.info(line)
      }
      self.sandbox = sandbox
      let pipeline = try Pipeline(configuration: options.pipelineConfiguration())
      let imaging: any ImageProcessing =
        switch decoding {
        case .sandboxed:
          SandboxedPipeline(pipeline: pipeline, sandbox: sandbox) { report in
            Self.record(report, metrics: metrics, eventLog: eventLog)
          }
        case .inProcessForBenchmarks: InProcessPipeline(pipeline: pipeline)
        }
      // A `storage_full` answer tells readiness the data directory's volume is full only where
      // that volume holds the index; with PostgreSQL it may be the database server's disk
      // (`statvfs` still watches the data directory's temporary files).
      let fullVolume = backends.isShared ? nil : readiness.volume
      // Videos are decoded in the sandbox whatever `decoding` says: no video path runs in-process.
      let video = SandboxedVideo(
        pipeline: pipeline, sandbox: sandbox, settings: options.videoStillsSettings()
      ) {
        report in Self.record(report, metrics: metrics, eventLog: eventLog)
      }
      let videoJobs = VideoRenditionWorker(
        store: store, video: video, settings: options.videoRenditionSettings(),
        node: StorageBackends.nodeName(port: configuration.server.port), sharedIndex: backends.isShared,
        scratchDirectory: directory, eventLog: eventLog)
      self.videoJobs = videoJobs
      let service = AttachmentService(
        store: store, imaging: imaging, video: video, access: control, metrics: metrics, options: options,
        eventLog: eventLog, volume: fullVolume, videoJobs: videoJobs, scratchDirectory: directory)
      attachments = service
      uploads = try Uploads(
        configuration: configuration.uploadsConfiguration(), store: backends.uploads, idempotency: store,
        host: AttachmentUploadHost(metrics: metrics, eventLog: eventLog, volume: fullVolume),
        scratchDirectory: directory)
      self.backends = backends
      sweeper = Sweeper(
        store: store, uploads: backends.uploads, interval: Double(options.sweepInterval), eventLog: eventLog)
      metrics.registry.onCollect { [weak service] in service?.refreshGauges() }
      metrics.registry.onCollect { [weak sandbox] in metrics.sandboxUp.set(sandbox?.layers == nil ? 0 : 1) }
      metrics.registry.onCollect { [volume = readiness.volume] in
        metrics.dataVolumeFreeBytes.set(volume.freeBytes() ?? 0)
      }
    } catch {
      throw StartError(
        description: String(describing: error), isUnavailable: (error as? StorageError)?.code == .unavailable)
    }
  }

  /// Labels the request (its id, on the response too, and its route template for metrics),
  /// answers CORS preflights, authenticates it once, and routes it (`route(_:…)`).
  public func head(_ head: HTTPRequestHead, context: inout RequestContext) -> HeadDecision {
    RequestIDs.label(&context, id: requestIDs.id(for: head))
    // Before routing and authentication: a preflight carries no credentials.
    if let preflight = cors.preflight(head) {
      context.route = Self.preflightRoute
      return .respond(preflight)
    }
    // Once per request, and only when something asks (CORS, or a route's access rule).
    var authentication: AuthResult?
    let access = attachments.access
    func authenticated() -> AuthResult {
      if let authentication { return authentication }
      let result = access.authenticate(head)
      authentication = result
      return result
    }
    cors.label(&context, head) {
      guard case .ok(let principal) = authenticated() else { return nil }
      return principal.tenant
    }
    return route(head, context: &context, authentication: authenticated)
  }

  /// 200 when ready (data directory and the storage backends writable, not draining), else
  /// 503 problem+json with `Retry-After`. The backends' answer is cached briefly
  /// (`StorageProbe`), so it follows a backend going down or coming back within seconds.
  func readinessResponse(requestID: String) -> HTTPResponse {
    var problem = readiness.check()
    if problem == nil, let reason = backends.probe.problem() { problem = .notReady(reason: reason) }
    // A helper starting (the server's own start, or a restart) takes milliseconds.
    if problem == nil, !sandbox.waitUntilReady(seconds: 1) {
      problem = .notReady(reason: "no decode sandbox: " + (sandbox.lastFailure ?? "its helper is starting"))
    }
    guard let problem else { return Self.ready }
    switch problem {
    case .notReady(let reason), .volumeFull(let reason):
      eventLog.warning("not ready", fields: [("request_id", requestID), ("reason", reason)])
    default: break
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

  /// Waits up to `seconds` for the decode sandbox and logs which layers it runs under (or
  /// why it has none: then uploads answer 503 and `/readyz` says why).
  public func logSandbox(waitingUpTo seconds: Double) {
    guard sandbox.waitUntilReady(seconds: seconds), let layers = sandbox.layers else {
      eventLog.warning(
        "no decode sandbox", fields: [("reason", sandbox.lastFailure ?? "its helper did not start in time")])
      return
    }
    var fields = [
      ("seccomp", "kill by default"), ("rlimits", "address space, CPU, no files, no core"),
      ("uid", String(layers.uid)), ("user_namespace", String(layers.userNamespace)),
      ("network_namespace", String(layers.networkNamespace)), ("ipc_namespace", String(layers.ipcNamespace)),
      ("mount_namespace", String(layers.mountNamespace)), ("pid_namespace", String(layers.pidNamespace)),
      ("landlock_abi", String(layers.landlockABI)),
    ]
    if !layers.notes.isEmpty { fields.append(("notes", layers.notes.joined(separator: "; "))) }
    eventLog.info("decode sandbox", fields: fields)
  }

  /// Starts the retention sweeper and the upload commit timer (`makeServer` does this).
  public func startBackgroundWork() {
    sweeper.start()
    videoJobs.start()
    uploads.start()
  }

  /// Stops the sweeper, the upload commit timer and the decode sandbox; call once the server
  /// has stopped.
  public func stopBackgroundWork() {
    sweeper.stop()
    videoJobs.stop()
    uploads.stop()
    sandbox.stop()
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
