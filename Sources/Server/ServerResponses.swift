import Glibc
import HTTP

/// The responses the server itself sends (protocol errors, timeouts, overload) — the one
/// place in the Server module where a condition becomes a status — and the response-head
/// writer.
enum ServerResponses {
  /// A problem+json response with a stable `code` (RFC 9457).
  static func problem(status: Int, code: String, retryAfter: Int? = nil) -> HTTPResponse {
    var headers: HTTPHeaders = ["Content-Type": ProblemDetails.contentType]
    if let retryAfter { headers.add(name: "Retry-After", value: String(retryAfter)) }
    return HTTPResponse(
      status: status, headers: headers, body: .bytes(ProblemDetails(status: status, code: code).json))
  }

  /// The answer to a request the parser refused.
  static func parserError(status: Int) -> HTTPResponse {
    let code =
      switch status {
      case 413: "payload_too_large"
      case 414: "uri_too_long"
      case 431: "header_too_large"
      case 501: "not_implemented"
      case 505: "http_version_not_supported"
      default: "malformed_request"
      }
    return problem(status: status, code: code)
  }

  /// The client was too slow sending its head or body.
  static let requestTimeout = problem(status: 408, code: "request_timeout")
  /// The worker pool and its queue are full.
  static let overloaded = problem(status: 503, code: "overloaded", retryAfter: 1)
  /// A response body file could not be opened, or the handler's status was not a final one.
  static let internalError = problem(status: 500, code: "internal_error")

  /// Written raw to a connection accepted over `maxConnections` before it is closed.
  static func connectionLimit(date: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    ProblemDetails(status: 503, code: "too_many_connections").writeResponse(
      headers: ["Retry-After": "1"], keepAlive: false, date: date, into: &out)
    return out
  }
}
