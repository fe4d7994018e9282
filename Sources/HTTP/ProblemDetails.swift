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
  /// The problem type URI (RFC 9457 §3.1.1); `about:blank` when the status says it all.
  public var type = "about:blank"
  /// Non-negative integer extension members (RFC 9457 §3.2), in order, e.g. `expected-offset`.
  public var integers: [IntegerMember] = []

  /// One integer extension member.
  public struct IntegerMember: Sendable, Equatable {
    public var name: String
    public var value: Int

    public init(_ name: String, _ value: Int) {
      self.name = name
      self.value = value
    }
  }

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
    out += #"{"type":"#.utf8
    Self.writeJSONString(type, into: &out)
    out += #","status":"#.utf8
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
    for member in integers {
      out.append(UInt8(ascii: ","))
      Self.writeJSONString(member.name, into: &out)
      out.append(UInt8(ascii: ":"))
      HTTPResponseWriter.writeDecimal(max(0, member.value), into: &out)
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
