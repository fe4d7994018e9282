/// An RFC 9457 `application/problem+json` error body with a stable machine-readable `code`.
public struct ProblemDetails: Sendable, Equatable {
  /// The media type to send in `Content-Type`.
  public static let contentType = "application/problem+json"

  /// The HTTP status code.
  public var status: Int
  /// A stable identifier clients can switch on (`payload_too_large`, `unsupported_format`, …).
  public var code: String
  /// A short human-readable summary; the reason phrase by default.
  public var title: String
  /// A human-readable explanation of this occurrence (never a library's internal error text).
  public var detail: String?
  /// The request id of this occurrence.
  public var instance: String?

  public init(status: Int, code: String, title: String? = nil, detail: String? = nil, instance: String? = nil)
  {
    self.status = status
    self.code = code
    self.title = title ?? HTTPResponseWriter.reasonPhrase(status)
    self.detail = detail
    self.instance = instance
  }

  /// Appends the JSON object to `out`.
  public func writeJSON(into out: inout [UInt8]) {
    out += #"{"type":"about:blank","status":"#.utf8
    HTTPResponseWriter.writeDecimal(max(0, status), into: &out)
    out += #","code":"#.utf8
    Self.writeJSONString(code, into: &out)
    out += #","title":"#.utf8
    Self.writeJSONString(title, into: &out)
    if let detail {
      out += #","detail":"#.utf8
      Self.writeJSONString(detail, into: &out)
    }
    if let instance {
      out += #","instance":"#.utf8
      Self.writeJSONString(instance, into: &out)
    }
    out.append(UInt8(ascii: "}"))
  }

  /// The JSON object as bytes.
  public var json: [UInt8] {
    var out: [UInt8] = []
    writeJSON(into: &out)
    return out
  }

  /// Appends a complete response carrying this problem (head and body; head only for HEAD).
  public func writeResponse(
    headers: HTTPHeaders = [:], isHEAD: Bool = false, keepAlive: Bool, date: [UInt8], into out: inout [UInt8]
  ) {
    var headers = headers
    headers.replaceOrAdd(name: "Content-Type", value: Self.contentType)
    HTTPResponseWriter.writeResponse(
      status: status, headers: headers, body: json, isHEAD: isHEAD, keepAlive: keepAlive, date: date,
      into: &out)
  }

  /// Appends `s` as a JSON string literal (RFC 8259 §7): quotes, backslashes and control
  /// characters escaped; everything else as UTF-8.
  static func writeJSONString(_ s: String, into out: inout [UInt8]) {
    out.append(ASCII.quote)
    for b in s.utf8 {
      switch b {
      case ASCII.quote: out += #"\""#.utf8
      case ASCII.backslash: out += #"\\"#.utf8
      case 0x0A: out += #"\n"#.utf8
      case 0x0D: out += #"\r"#.utf8
      case 0x09: out += #"\t"#.utf8
      case 0x00..<0x20:
        out += #"\u00"#.utf8
        out.append(b < 0x10 ? 0x30 : 0x31)
        let low = b & 0xF
        out.append(low < 10 ? 0x30 + low : 0x61 + low - 10)
      default: out.append(b)
      }
    }
    out.append(ASCII.quote)
  }
}
