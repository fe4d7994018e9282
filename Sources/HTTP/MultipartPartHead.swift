/// The header fields of one multipart part, with what `Content-Disposition` and `Content-Type` say.
public struct MultipartPartHead: Sendable, Equatable {
  /// Every header field of the part, in order.
  public var headers: HTTPHeaders
  /// The `name` parameter of `Content-Disposition: form-data`.
  public var name: String?
  /// The file name as sent (`filename*` decoded when present and valid, else `filename`); never
  /// trusted: it may hold path separators or anything else.
  public var filename: String?
  /// The part's `Content-Type`, as sent.
  public var contentType: String?

  public init(
    headers: HTTPHeaders = [:], name: String? = nil, filename: String? = nil, contentType: String? = nil
  ) {
    self.headers = headers
    self.name = name
    self.filename = filename
    self.contentType = contentType
  }

  init(parsing input: UnsafeRawBufferPointer, fields: Range<Int>) throws(MultipartError) {
    var headers = HTTPHeaders()
    do {
      try HTTPRequestParser.parseFieldLines(input, fields) { name, value throws(HTTPParserError) in
        headers.add(name: input.string(name), value: input.string(value))
      }
    } catch {
      throw MultipartError(.invalidPartHeader)
    }
    self.init(headers: headers, contentType: headers.first(name: "content-type"))
    if let disposition = headers.first(name: "content-disposition") {
      let parameters = Self.parameters(Array(disposition.utf8))
      name = parameters["name"]
      filename = parameters["filename*"].flatMap(Self.decodeExtendedValue) ?? parameters["filename"]
    }
  }

  /// The `; name=value` parameters after the first token (RFC 9110 §5.6.6), names lowercased;
  /// values are tokens or quoted strings (quoted-pairs unescaped). The first of a name wins.
  static func parameters(_ bytes: [UInt8]) -> [String: String] {
    var result: [String: String] = [:]
    var i = 0
    let end = bytes.count
    func skipWhitespace() { while i < end, ASCII.isWhitespace(bytes[i]) { i += 1 } }
    while i < end, bytes[i] != ASCII.semicolon { i += 1 }
    while i < end {
      i += 1  // the semicolon
      skipWhitespace()
      let nameStart = i
      while i < end, ASCII.isTchar(bytes[i]) { i += 1 }
      let name = String(decoding: bytes[nameStart..<i].map(ASCII.lowercased), as: UTF8.self)
      skipWhitespace()
      var value: [UInt8] = []
      if i < end, bytes[i] == ASCII.equals {
        i += 1
        skipWhitespace()
        if i < end, bytes[i] == ASCII.quote {
          i += 1
          while i < end, bytes[i] != ASCII.quote {
            if bytes[i] == ASCII.backslash, i + 1 < end { i += 1 }
            value.append(bytes[i])
            i += 1
          }
          i += 1
        } else {
          let valueStart = i
          while i < end, bytes[i] != ASCII.semicolon, !ASCII.isWhitespace(bytes[i]) { i += 1 }
          value = Array(bytes[valueStart..<i])
        }
      }
      if !name.isEmpty, result[name] == nil { result[name] = String(decoding: value, as: UTF8.self) }
      while i < end, bytes[i] != ASCII.semicolon { i += 1 }
    }
    return result
  }

  /// Decodes an RFC 8187 (ex-5987) `ext-value`: `charset'[language]'pct-encoded`, UTF-8 or
  /// ISO-8859-1; nil when malformed or not valid in its charset.
  static func decodeExtendedValue(_ value: String) -> String? {
    let pieces = value.utf8.split(
      separator: UInt8(ascii: "'"), maxSplits: 2, omittingEmptySubsequences: false)
    guard pieces.count == 3 else { return nil }
    var bytes: [UInt8] = []
    var iterator = pieces[2].makeIterator()
    while let b = iterator.next() {
      if b == UInt8(ascii: "%") {
        guard let hi = iterator.next().flatMap(ASCII.hexValue),
          let lo = iterator.next().flatMap(ASCII.hexValue)
        else { return nil }
        bytes.append(UInt8(hi << 4 | lo))
      } else {
        bytes.append(b)
      }
    }
    let charset = pieces[0]
    if charset.elementsEqualCaseInsensitive("utf-8".utf8) {
      return String(validating: bytes, as: UTF8.self)
    }
    if charset.elementsEqualCaseInsensitive("iso-8859-1".utf8) {
      return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }
    return nil
  }
}

extension MultipartParser {
  /// The boundary of a `multipart/form-data` Content-Type, or nil when the type is another one
  /// or the boundary is missing or invalid (RFC 2046 §5.1.1).
  public static func boundary(fromContentType contentType: String) -> String? {
    let bytes = Array(contentType.utf8)
    var typeEnd = 0
    while typeEnd < bytes.count, bytes[typeEnd] != ASCII.semicolon { typeEnd += 1 }
    var lo = 0
    var hi = typeEnd
    while lo < hi, ASCII.isWhitespace(bytes[lo]) { lo += 1 }
    while hi > lo, ASCII.isWhitespace(bytes[hi - 1]) { hi -= 1 }
    guard bytes[lo..<hi].elementsEqualCaseInsensitive("multipart/form-data".utf8) else { return nil }
    guard let boundary = MultipartPartHead.parameters(bytes)["boundary"],
      isValidBoundary(Array(boundary.utf8))
    else { return nil }
    return boundary
  }
}
