import Glibc
import HTTP

/// The responses the server itself sends (protocol errors, timeouts, overload) — the one
/// place in the Server module where a condition becomes a status — and the response-head
/// writer.
enum ServerResponses {
  /// A problem+json response with a stable `code` (RFC 9457).
  static func problem(status: Int, code: String, retryAfter: Int? = nil) -> HTTPResponse {
    let title = reason(status)
    let body = #"{"type":"about:blank","title":"\#(title)","status":\#(status),"code":"\#(code)"}"#
    var headers: HTTPHeaders = ["Content-Type": "application/problem+json"]
    if let retryAfter { headers.add(name: "Retry-After", value: String(retryAfter)) }
    return HTTPResponse(status: status, headers: headers, body: .bytes(Array(body.utf8)))
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
  /// A response body file could not be opened.
  static let internalError = problem(status: 500, code: "internal_error")

  /// Written raw to a connection accepted over `maxConnections` before it is closed.
  static let connectionLimit: [UInt8] = {
    let body = #"{"type":"about:blank","title":"Service Unavailable","status":503,"code":"too_many_connections"}"#
    return Array(
      ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\n"
        + "Connection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8)
  }()

  /// `HTTP/1.1 100 Continue` and other interim heads.
  static func interimHead(status: Int, headers: HTTPHeaders) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(64)
    appendStatusLine(&out, status)
    for field in headers { appendField(&out, field.name, field.value) }
    out.append(contentsOf: [13, 10])
    return out
  }

  /// A final response head. The framing, `Date` and `Connection` fields are ours: the handler's
  /// own versions of those are dropped.
  static func head(
    status: Int, headers: HTTPHeaders, bodyLength: UInt64, close: Bool, date: [UInt8]
  ) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(192)
    appendStatusLine(&out, status)
    out.append(contentsOf: "Date: ".utf8)
    out.append(contentsOf: date)
    out.append(contentsOf: [13, 10])
    for field in headers where !isFramingField(field.name) { appendField(&out, field.name, field.value) }
    if status != 204 && status != 304 && status >= 200 {
      out.append(contentsOf: "Content-Length: ".utf8)
      out.append(contentsOf: String(bodyLength).utf8)
      out.append(contentsOf: [13, 10])
    }
    if close { out.append(contentsOf: "Connection: close\r\n".utf8) }
    out.append(contentsOf: [13, 10])
    return out
  }

  private static func isFramingField(_ name: String) -> Bool {
    switch name.utf8.count {
    case 4: name.utf8.elementsEqualCaseInsensitive("date".utf8)
    case 10: name.utf8.elementsEqualCaseInsensitive("connection".utf8)
    case 14: name.utf8.elementsEqualCaseInsensitive("content-length".utf8)
    case 17: name.utf8.elementsEqualCaseInsensitive("transfer-encoding".utf8)
    default: false
    }
  }

  private static func appendStatusLine(_ out: inout [UInt8], _ status: Int) {
    out.append(contentsOf: "HTTP/1.1 ".utf8)
    out.append(contentsOf: String(status).utf8)
    out.append(0x20)
    out.append(contentsOf: reason(status).utf8)
    out.append(contentsOf: [13, 10])
  }

  private static func appendField(_ out: inout [UInt8], _ name: String, _ value: String) {
    out.append(contentsOf: name.utf8)
    out.append(contentsOf: ": ".utf8)
    // A CR or LF in a value would let a handler split the response; drop such bytes.
    for byte in value.utf8 where byte != 13 && byte != 10 { out.append(byte) }
    out.append(contentsOf: [13, 10])
  }

  static func reason(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 101: "Switching Protocols"
    case 103: "Early Hints"
    case 104: "Upload Resumption Supported"
    case 200: "OK"
    case 201: "Created"
    case 202: "Accepted"
    case 204: "No Content"
    case 206: "Partial Content"
    case 304: "Not Modified"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 411: "Length Required"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 422: "Unprocessable Content"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 503: "Service Unavailable"
    case 505: "HTTP Version Not Supported"
    default: "Status"
    }
  }
}

/// The `Date` field value, formatted once per second per loop.
final class DateCache {
  private var second: time_t = -1
  private var value: [UInt8] = []

  /// IMF-fixdate of the current second, e.g. "Mon, 30 Nov 2026 07:04:46 GMT".
  var current: [UInt8] {
    let t = time(nil)
    if t != second {
      second = t
      var tm = tm()
      var copy = t
      gmtime_r(&copy, &tm)
      let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
      let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
      func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
      let text =
        "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(tm.tm_year + 1900) "
        + "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
      value = Array(text.utf8)
    }
    return value
  }
}
