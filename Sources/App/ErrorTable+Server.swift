import HTTP
import Server

extension ErrorTable {
  /// Seconds a client is asked to wait when the worker pool or the connection cap is full:
  /// short, because these clear as soon as requests finish.
  public static let overloadRetryAfterSeconds = 1

  /// The rows for what the server answers on its own (reached from `publicError(for:)`).
  static func publicError(for condition: ServerCondition) -> PublicError {
    switch condition {
    case .malformedRequest(let error): publicError(for: error)
    case .requestTimeout: PublicError(status: 408, code: "request_timeout", title: "Request timeout")
    case .overloaded:
      retryLater("overloaded", "Server is overloaded", after: overloadRetryAfterSeconds)
    case .tooManyConnections:
      retryLater("too_many_connections", "Too many connections", after: overloadRetryAfterSeconds)
    case .invalidResponseStatus, .unreadableFile: internalError
    }
  }

  /// The problem+json response for a server condition. Without a request id (the canned
  /// connection-cap answer) the problem has no `instance`.
  public static func response(for condition: ServerCondition, requestID: String?, log: EventLog?)
    -> HTTPResponse
  {
    if let requestID { return response(for: condition as any Error, requestID: requestID, log: log) }
    let entry = publicError(for: condition as any Error)
    let problem = ProblemDetails(status: entry.status, code: entry.code, title: entry.title)
    var headers = entry.headers
    headers.add(name: "Content-Type", value: ProblemDetails.contentType)
    headers.add(name: "Cache-Control", value: "no-store")
    return HTTPResponse(status: entry.status, headers: headers, body: .bytes(problem.json))
  }
}
