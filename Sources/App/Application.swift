import HTTP
import Server

/// attachd's request handler: routes requests, answers health checks, and turns every error
/// into problem+json through `ErrorTable`.
public final class Application: HTTPHandler {
  /// The routes attachd answers (issue 4 adds the attachments API and metrics).
  public enum Route: Sendable, Equatable {
    case healthz
    case readyz
  }

  /// The version `attachd --version` prints.
  public static let version = "0.1.0"

  public let configuration: Configuration
  public let readiness: Readiness
  public let accessLog: AccessLog
  public let eventLog: EventLog
  let router: Router<Route>

  /// The routing table.
  static func makeRouter() -> Router<Route> {
    var router = Router<Route>()
    router.add("GET", "/healthz", .healthz)
    router.add("GET", "/readyz", .readyz)
    return router
  }

  public init(configuration: Configuration, accessLog: AccessLog, eventLog: EventLog) {
    self.configuration = configuration
    self.accessLog = accessLog
    self.eventLog = eventLog
    self.readiness = Readiness(dataDirectory: configuration.storage.dataDirectory)
    self.router = Self.makeRouter()
  }

  public func head(_ head: HTTPRequestHead, context: RequestContext) -> HeadDecision {
    // The server adds X-Request-Id to every response.
    let requestID = context.requestID
    switch router.match(method: head.method, path: head.path) {
    case .found(.healthz, _):
      return .respond(Self.healthy)
    case .found(.readyz, _):
      // The probe writes a file: off the event loop, unless a (pointless) body was sent, in
      // which case the server answers at once and closes rather than reading it.
      guard head.framing == .none else { return .respond(readinessResponse(requestID: requestID)) }
      return .readBody(DeferredResponse { [self] in readinessResponse(requestID: requestID) })
    case .methodNotAllowed(let allow):
      return .respond(
        ErrorTable.response(for: AppError.methodNotAllowed(allow: allow), requestID: requestID, log: nil))
    case .notFound:
      return .respond(ErrorTable.response(for: AppError.notFound, requestID: requestID, log: nil))
    }
  }

  /// 200 when ready, else 503 problem+json with `Retry-After`.
  func readinessResponse(requestID: String) -> HTTPResponse {
    guard let problem = readiness.check() else { return Self.ready }
    if case .notReady(let reason) = problem {
      eventLog.warning("not ready", fields: [("request_id", requestID), ("reason", reason)])
    }
    return ErrorTable.response(for: problem, requestID: requestID, log: nil)
  }

  // Built once: /healthz is what load balancers and benchmarks hit most.
  static let healthy = json(status: 200, #"{"status":"ok"}"#)
  static let ready = json(status: 200, #"{"status":"ready"}"#)

  static func json(status: Int, _ text: StaticString) -> HTTPResponse {
    let body = text.withUTF8Buffer { Array($0) + [0x0A] }
    return HTTPResponse(
      status: status, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
      body: .bytes(body))
  }
}
