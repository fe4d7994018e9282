/// How a response body is delimited on the wire.
public enum HTTPResponseFraming: Sendable, Equatable {
  /// `Content-Length: n` (also for HEAD, where the body is not sent).
  case contentLength(Int)
  /// `Transfer-Encoding: chunked`; write the body with the chunk helpers.
  case chunked
  /// No body and no framing header (204, 304, or a 1xx).
  case noBody
  /// Neither header: the body ends when the connection closes (for HTTP/1.0 clients that
  /// cannot take chunked); forces `Connection: close`.
  case untilClose
}

/// Serialises response heads and chunk framing into a caller-provided buffer (no allocation
/// beyond the buffer's growth).
///
/// Fields named `Content-Length`, `Transfer-Encoding`, `Connection` or `Date` in the caller's
/// headers are skipped: the writer owns those. Control characters in names or values are never
/// written (a field with a bad name is dropped, CTLs in values become spaces), so a value taken
/// from a request can never split the response.
public enum HTTPResponseWriter {
  /// Appends a final response head: status line, `Date`, `Connection`, the framing header, the
  /// caller's fields and the empty line.
  public static func writeHead(
    status: Int, headers: HTTPHeaders = [:], framing: HTTPResponseFraming, keepAlive: Bool, date: [UInt8],
    into out: inout [UInt8]
  ) {
    precondition((200...999).contains(status), "a final response needs a status of 200 or more")
    writeStatusLine(status, into: &out)
    out += "Date: ".utf8
    out += date
    out += "\r\n".utf8
    // 204 and 304 never carry a body; other statuses follow the framing.
    let framing = status == 204 || status == 304 ? .noBody : framing
    let close = !keepAlive || framing == .untilClose
    out += (close ? "Connection: close\r\n" : "Connection: keep-alive\r\n").utf8
    switch framing {
    case .contentLength(let n):
      out += "Content-Length: ".utf8
      writeDecimal(n, into: &out)
      out += "\r\n".utf8
    case .chunked: out += "Transfer-Encoding: chunked\r\n".utf8
    case .noBody, .untilClose: break
    }
    writeFields(headers, into: &out)
    out += "\r\n".utf8
  }

  /// Appends an interim (1xx) response such as `100 Continue`, `103 Early Hints` or `104 Upload
  /// Resumption Supported`; it never carries framing or `Connection` fields.
  public static func writeInterim(status: Int, headers: HTTPHeaders = [:], into out: inout [UInt8]) {
    precondition((100...199).contains(status) && status != 101, "an interim response is 1xx but not 101")
    writeStatusLine(status, into: &out)
    writeFields(headers, into: &out)
    out += "\r\n".utf8
  }

  /// Appends a whole response with a fixed-length body; for a HEAD request only the head (with
  /// the same `Content-Length`) is written.
  public static func writeResponse(
    status: Int, headers: HTTPHeaders = [:], body: some Collection<UInt8>, isHEAD: Bool = false,
    keepAlive: Bool, date: [UInt8], into out: inout [UInt8]
  ) {
    writeHead(
      status: status, headers: headers, framing: .contentLength(body.count), keepAlive: keepAlive, date: date,
      into: &out)
    if !isHEAD && status != 204 && status != 304 { out += body }
  }

  /// Appends the size line of a chunk of `size` bytes (`size` > 0; the data and
  /// ``writeChunkEnd(into:)`` follow).
  public static func writeChunkHeader(size: Int, into out: inout [UInt8]) {
    precondition(size > 0, "a chunk of size 0 is the last chunk")
    let digits = (Int.bitWidth - size.leadingZeroBitCount + 3) / 4
    for shift in stride(from: (digits - 1) * 4, through: 0, by: -4) {
      out.append(hexDigits[(size >> shift) & 0xF])
    }
    out += "\r\n".utf8
  }

  /// Appends the CRLF that ends a chunk's data.
  public static func writeChunkEnd(into out: inout [UInt8]) {
    out += "\r\n".utf8
  }

  /// Appends one complete chunk (nothing for empty data, which would end the body).
  public static func writeChunk(_ data: some Collection<UInt8>, into out: inout [UInt8]) {
    guard !data.isEmpty else { return }
    writeChunkHeader(size: data.count, into: &out)
    out += data
    writeChunkEnd(into: &out)
  }

  /// Appends the last chunk, optional trailer fields and the final CRLF.
  public static func writeLastChunk(trailers: HTTPHeaders = [:], into out: inout [UInt8]) {
    out += "0\r\n".utf8
    writeFields(trailers, into: &out)
    out += "\r\n".utf8
  }

  private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

  static func writeStatusLine(_ status: Int, into out: inout [UInt8]) {
    precondition((100...999).contains(status), "status codes have three digits")
    out += "HTTP/1.1 ".utf8
    writeDecimal(status, into: &out)
    out.append(ASCII.space)
    out += reasonPhrase(status).utf8
    out += "\r\n".utf8
  }

  static func writeDecimal(_ n: Int, into out: inout [UInt8]) {
    precondition(n >= 0)
    var divisor = 1
    while n / divisor >= 10 { divisor *= 10 }
    while divisor > 0 {
      out.append(UInt8(truncatingIfNeeded: 0x30 + n / divisor % 10))
      divisor /= 10
    }
  }

  static func writeFields(_ headers: HTTPHeaders, into out: inout [UInt8]) {
    for (name, value) in headers {
      let n = name.utf8
      guard !n.isEmpty, n.allSatisfy(ASCII.isTchar) else { continue }
      switch n.count {
      case 4 where n.elementsEqualCaseInsensitive("date".utf8): continue
      case 10 where n.elementsEqualCaseInsensitive("connection".utf8): continue
      case 14 where n.elementsEqualCaseInsensitive("content-length".utf8): continue
      case 17 where n.elementsEqualCaseInsensitive("transfer-encoding".utf8): continue
      default: break
      }
      out += n
      out += ": ".utf8
      for b in value.utf8 { out.append(ASCII.isFieldValueByte(b) ? b : ASCII.space) }
      out += "\r\n".utf8
    }
  }

  /// The reason phrase for `status` (RFC 9110 §15 and the ones attachd sends).
  public static func reasonPhrase(_ status: Int) -> String {
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
    case 301: "Moved Permanently"
    case 302: "Found"
    case 303: "See Other"
    case 304: "Not Modified"
    case 307: "Temporary Redirect"
    case 308: "Permanent Redirect"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 406: "Not Acceptable"
    case 408: "Request Timeout"
    case 409: "Conflict"
    case 410: "Gone"
    case 411: "Length Required"
    case 412: "Precondition Failed"
    case 413: "Content Too Large"
    case 414: "URI Too Long"
    case 415: "Unsupported Media Type"
    case 416: "Range Not Satisfiable"
    case 417: "Expectation Failed"
    case 422: "Unprocessable Content"
    case 428: "Precondition Required"
    case 429: "Too Many Requests"
    case 431: "Request Header Fields Too Large"
    // tus 1.0 checksum extension: the chunk did not match its `Upload-Checksum`.
    case 460: "Checksum Mismatch"
    case 500: "Internal Server Error"
    case 501: "Not Implemented"
    case 502: "Bad Gateway"
    case 503: "Service Unavailable"
    case 504: "Gateway Timeout"
    case 505: "HTTP Version Not Supported"
    // RFC 4918: the server's storage is full (`storage_full`).
    case 507: "Insufficient Storage"
    default: "Unknown"
    }
  }
}
