import HTTP
import ImagePipeline
import Server
import Storage
import Uploads

extension Application {
  /// The routes attachd answers.
  public enum Route: Sendable, Hashable {
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
      case .uploadResource: ResumableUploads.path + "/{id}"
      case .image, .delete: Application.attachmentsPath + "/{id}"
      case .meta: Application.attachmentsPath + "/{id}/meta"
      case .tusCreation: TusProtocol.path
      case .tusUpload: TusProtocol.path + "/{id}"
      }
    }

    /// Whether the route speaks tus (every answer carries `Tus-Resumable`).
    var isTus: Bool { self == .tusCreation || self == .tusUpload }
  }

  /// The routing table: which method and path is which route.
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
      router.add(method, ResumableUploads.path + "/{id}", .uploadResource)
    }
    for method in TusUploads.collectionMethods { router.add(method, TusProtocol.path, .tusCreation) }
    for method in TusUploads.uploadMethods { router.add(method, TusProtocol.path + "/{id}", .tusUpload) }
    return router
  }

  /// Who may call a route.
  enum Access {
    /// Anyone (health, metrics, the description).
    case open
    /// A key or token carrying the scope, within its rate.
    case scope(Scope)
    /// A signed link (checked against the index by the handler), else as `scope`.
    case signedLinkOr(Scope)
  }

  /// One row of the route table: who may call the route, what is checked before that (the
  /// protocol's own framing, refused first whoever asks), and the handler.
  struct RouteEntry {
    var access: Access
    var precheck: (HTTPRequestHead) -> (any Error)? = { _ in nil }
    var handle: (Application, inout RouteRequest) -> HeadDecision
  }

  /// One request as its route's handler sees it.
  struct RouteRequest {
    let head: HTTPRequestHead
    let route: Route
    /// The path's `{id}`, or "".
    let id: String
    /// The caller the route's access rule admitted; nil for an open route or a signed link.
    let caller: Principal?
    var context: RequestContext
  }

  /// The route table: each route's access rule and handler.
  static func entry(for route: Route) -> RouteEntry {
    switch route {
    case .healthz: RouteEntry(access: .open) { _, _ in .respond(healthy) }
    case .readyz:
      // The probes write files: off the event loop (a body sent with it is never read).
      RouteEntry(access: .open) { app, request in
        let requestID = request.context.requestID
        return .offload { _ in app.readinessResponse(requestID: requestID) }
      }
    case .metrics:
      RouteEntry(access: .open) { app, _ in
        .respond(
          HTTPResponse(
            status: 200, headers: ["Content-Type": MetricsRegistry.contentType, "Cache-Control": "no-store"],
            body: .bytes(Array(app.metrics.render().utf8))))
      }
    case .openAPI: RouteEntry(access: .open) { _, _ in .respond(openAPI) }
    case .upload:
      RouteEntry(access: .scope(.upload)) { app, request in
        app.withUploadCaller(&request, profiles: true) { caller, head, _, context in
          app.uploads.plain.head(head, caller: caller, context: &context)
        }
      }
    case .image:
      RouteEntry(access: .signedLinkOr(.read), precheck: profileCheck) { app, request in
        app.attachments.image(request.head, id: request.id, caller: request.caller, context: request.context)
      }
    case .meta:
      RouteEntry(access: .scope(.read), precheck: profileCheck) { app, request in
        app.attachments.meta(request.head, id: request.id, caller: request.caller!, context: request.context)
      }
    case .delete:
      RouteEntry(access: .scope(.delete)) { app, request in
        app.attachments.delete(id: request.id, caller: request.caller!, context: request.context)
      }
    case .uploadResource:
      RouteEntry(access: .scope(.upload), precheck: resumableCheck) { app, request in
        app.withUploadCaller(&request, profiles: request.head.method == "PATCH") {
          caller, head, id, context in
          app.uploads.resumable.resource(head, id: id, caller: caller, context: &context)
        }
      }
    case .uploadOptions:
      RouteEntry(access: .scope(.upload)) { app, request in
        app.withUploadCaller(&request, profiles: false) { caller, head, _, context in
          app.uploads.resumable.options(head, caller: caller, context: context)
        }
      }
    case .tusCreation, .tusUpload:
      RouteEntry(access: .scope(.upload), precheck: tusCheck) { app, request in
        let upload = request.route == .tusUpload
        return app.withUploadCaller(&request, profiles: false) { caller, head, id, context in
          app.uploads.tus.head(
            head, method: TusProtocol.method(of: head), id: upload ? id : nil, caller: caller,
            context: &context)
        }
      }
    }
  }

  /// A `profile` query that names no model profile is refused before anything else is.
  static func profileCheck(_ head: HTTPRequestHead) -> (any Error)? {
    if case .failure(let error) = ProfileQuery.profiles(in: head.query) { return error }
    return nil
  }

  /// A request on an upload URL without an interop version attachd speaks is not a resumable
  /// request: nothing is there.
  static func resumableCheck(_ head: HTTPRequestHead) -> (any Error)? {
    ResumableUploads.isResumable(head, onUploadURL: true) ? nil : AppError.notFound
  }

  /// A tus request must speak tus 1.0 (`Tus-Resumable`), whoever sends it.
  static func tusCheck(_ head: HTTPRequestHead) -> (any Error)? {
    TusProtocol.checkVersion(head, method: TusProtocol.method(of: head))
  }

  /// Routes `head`: the tus method override and headers for tus paths, the route's label, its
  /// precheck, its access rule judged on the request's one authentication, then its handler.
  func route(
    _ head: HTTPRequestHead, context: inout RequestContext, authentication: () -> AuthResult
  ) -> HeadDecision {
    let onTusPath = head.path == TusProtocol.path || head.path.hasPrefix(TusProtocol.path + "/")
    var match = router.match(method: onTusPath ? TusProtocol.method(of: head) : head.method, path: head.path)
    if case .found(.upload, let parameters) = match, head.headers.contains(name: "Tus-Resumable") {
      // A tus client pointed at the attachments URL: tus wins over the other upload protocols
      // when it says so, and the upload lives under /v1/tus like any other.
      match = .found(.tusCreation, parameters: parameters)
    }
    let requestID = context.requestID
    guard case .found(let route, let parameters) = match else {
      context.route = Self.unmatchedRoute
      if onTusPath { Self.labelTus(&context) }
      if case .methodNotAllowed(let allow) = match {
        return .respond(
          ErrorTable.response(for: AppError.methodNotAllowed(allow: allow), requestID: requestID, log: nil))
      }
      return .respond(ErrorTable.response(for: AppError.notFound, requestID: requestID, log: nil))
    }
    context.route = route.template
    if route.isTus || onTusPath { Self.labelTus(&context) }
    let entry = Self.entry(for: route)
    if let error = entry.precheck(head) { return .respond(attachments.problem(error, requestID: requestID)) }
    if [.upload, .uploadOptions, .uploadResource].contains(route) {
      ResumableUploads.label(head, onUploadURL: route == .uploadResource, context: &context)
    }
    var caller: Principal?
    switch entry.access {
    case .open: break
    case .signedLinkOr where SignedURL.isSigned(query: head.query.map(String.init)): break
    case .scope(let scope), .signedLinkOr(let scope):
      switch attachments.access.authorize(authentication(), scope: scope) {
      case .failure(let error): return .respond(attachments.problem(error, requestID: requestID))
      case .success(let principal): caller = principal
      }
    }
    var request = RouteRequest(
      head: head, route: route, id: parameters["id"] ?? "", caller: caller, context: context)
    defer { context = request.context }
    return entry.handle(self, &request)
  }

  /// Every tus answer carries `Tus-Resumable`, the server's own (408, 503 …) and 404/405 too.
  static func labelTus(_ context: inout RequestContext) {
    for (name, value) in TusProtocol.responseHeaders { context.responseHeaders.add(name: name, value: value) }
  }

  /// Runs `body` with the request's caller as the upload layer sees it, made for the model
  /// profiles its query asks for (`profiles`; a bad one is refused), else the tenant's default.
  func withUploadCaller(
    _ request: inout RouteRequest, profiles: Bool,
    _ body: (UploadCaller, HTTPRequestHead, String, inout RequestContext) -> HeadDecision
  ) -> HeadDecision {
    var requested: [ModelProfile] = []
    if profiles {
      switch ProfileQuery.profiles(in: request.head.query) {
      case .failure(let error):
        return .respond(attachments.problem(error, requestID: request.context.requestID))
      case .success(let asked): requested = asked
      }
    }
    let caller = AttachmentCaller(
      principal: request.caller!, requested: requested, options: attachments.options.profiles)
    return body(attachments.uploadCaller(caller), request.head, request.id, &request.context)
  }
}

extension Application.Configuration {
  /// The upload layer's settings these options describe.
  func uploadsConfiguration() -> Uploads.Configuration {
    var config = Uploads.Configuration()
    config.spoolThreshold = uploads.spoolThreshold
    config.resumableLifetime = uploads.resumableTTL
    config.writeBufferBytes = uploads.writeBufferBytes
    config.commitInterval = uploads.commitInterval
    config.maxUploadBytes = attachments.maxTransferBytes
    config.maxParts = attachments.maxParts
    config.maxMetadataBytes = uploads.storeConfiguration().maxMetadataBytes
    config.publicBaseURL = attachments.publicBaseURL
    return config
  }
}
