import HTTP
import Server

/// The test handlers' answers to server conditions: a tiny stand-in for the App's error
/// table, with the statuses and codes the live tests expect.
enum TestConditions {
  static func response(for condition: ServerCondition, requestID: String?) -> HTTPResponse {
    let (status, code, retryAfter): (Int, String, Int?) =
      switch condition {
      case .malformedRequest(let error): (error.status, "malformed_request", nil)
      case .requestTimeout: (408, "request_timeout", nil)
      case .overloaded: (503, "overloaded", 1)
      case .tooManyConnections: (503, "too_many_connections", 1)
      case .invalidResponseStatus, .unreadableFile: (500, "internal_error", nil)
      }
    var headers: HTTPHeaders = ["Content-Type": ProblemDetails.contentType]
    if let retryAfter { headers.add(name: "Retry-After", value: String(retryAfter)) }
    let problem = ProblemDetails(status: status, code: code, instance: requestID)
    return HTTPResponse(status: status, headers: headers, body: .bytes(problem.json))
  }
}
