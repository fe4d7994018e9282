/// Parsing of complete blocks: the request line, field lines, framing and chunk-size lines.
extension HTTPRequestParser {
  /// The error for an unexpected byte: a CR is always reported as a bare CR.
  @inline(__always)
  static func refuse(_ byte: UInt8, _ kind: HTTPParserError.Kind) -> HTTPParserError {
    HTTPParserError(byte == ASCII.cr ? .bareCR : kind)
  }

  /// Parses `method SP request-target SP HTTP-version` and the header fields after it.
  func parseHead(_ input: UnsafeRawBufferPointer, requestLine: Range<Int>, fields: Range<Int>)
    throws(HTTPParserError) -> HTTPRequestHead
  {
    let end = requestLine.upperBound
    var i = requestLine.lowerBound
    while i < end, ASCII.isTchar(input[i]) { i += 1 }
    guard i > requestLine.lowerBound, i < end, input[i] == ASCII.space else {
      throw Self.refuse(i < end ? input[i] : 0, .invalidRequestLine)
    }
    let method = requestLine.lowerBound..<i
    i += 1
    let targetStart = i
    while i < end, input[i] > 0x20, input[i] < 0x7F { i += 1 }
    guard i > targetStart, i < end, input[i] == ASCII.space else {
      throw Self.refuse(i < end ? input[i] : 0, .invalidRequestLine)
    }
    let target = targetStart..<i
    i += 1
    let version = try Self.parseVersion(input, i..<end)

    var builder = FramingBuilder(version: version)
    var headers = HTTPHeaders()
    try Self.parseFieldLines(input, fields) { name, value throws(HTTPParserError) in
      try builder.inspect(input, name: name, value: value)
      headers.add(name: input.string(name), value: input.string(value))
    }
    let framing = try builder.framing()
    return HTTPRequestHead(
      method: input.string(method), target: input.string(target), version: version, headers: headers,
      framing: framing, keepAlive: builder.keepAlive, expectsContinue: builder.expectsContinue)
  }

  private static func parseVersion(_ input: UnsafeRawBufferPointer, _ range: Range<Int>)
    throws(HTTPParserError) -> HTTPVersion
  {
    for j in range where input[j] == ASCII.cr { throw HTTPParserError(.bareCR) }
    let s = range.lowerBound
    // "HTTP" is case-sensitive (RFC 9112 §2.3).
    guard range.count == 8, input[s] == 0x48, input[s + 1] == 0x54, input[s + 2] == 0x54,
      input[s + 3] == 0x50, input[s + 4] == 0x2F, input[s + 6] == 0x2E
    else { throw HTTPParserError(.invalidRequestLine) }
    let major = input[s + 5] &- 0x30
    let minor = input[s + 7] &- 0x30
    guard major < 10, minor < 10 else { throw HTTPParserError(.invalidRequestLine) }
    guard major == 1, minor <= 1 else { throw HTTPParserError(.unsupportedVersion) }
    return minor == 0 ? .http1_0 : .http1_1
  }

  /// Validates each `name: value` line in `range` (CRLF-terminated lines) and reports the name
  /// and the value without surrounding whitespace.
  static func parseFieldLines(
    _ input: UnsafeRawBufferPointer, _ range: Range<Int>,
    _ body: (Range<Int>, Range<Int>) throws(HTTPParserError) -> Void
  ) throws(HTTPParserError) {
    var lineStart = range.lowerBound
    while lineStart < range.upperBound {
      // Every line in the block was already checked to end in CRLF.
      let lf = input.firstIndex(of: ASCII.lf, from: lineStart)!
      let lineEnd = lf - 1
      if ASCII.isWhitespace(input[lineStart]) { throw HTTPParserError(.obsoleteLineFolding) }
      var i = lineStart
      while i < lineEnd, ASCII.isTchar(input[i]) { i += 1 }
      guard i < lineEnd, i > lineStart, input[i] == ASCII.colon else {
        if i < lineEnd, i > lineStart, ASCII.isWhitespace(input[i]) {
          throw HTTPParserError(.whitespaceBeforeColon)
        }
        throw refuse(i < lineEnd ? input[i] : 0, .invalidHeaderName)
      }
      let name = lineStart..<i
      i += 1
      let valueStart = i
      while i < lineEnd {
        let b = input[i]
        if !ASCII.isFieldValueByte(b) { throw refuse(b, .invalidHeaderValue) }
        i += 1
      }
      try body(name, input.trimmingWhitespace(valueStart..<lineEnd))
      lineStart = lf + 1
    }
  }

  /// Parses `chunk-size [ chunk-ext ]` (RFC 9112 §7.1.1) and returns the size.
  static func parseChunkLine(_ input: UnsafeRawBufferPointer, _ range: Range<Int>) throws(HTTPParserError)
    -> UInt64
  {
    let end = range.upperBound
    var i = range.lowerBound
    var size: UInt64 = 0
    while i < end, let digit = ASCII.hexValue(input[i]) {
      // Sizes stay below 2^63 so that they fit an Int anywhere downstream.
      guard size <= UInt64(Int64.max) >> 4 else { throw HTTPParserError(.chunkSizeOverflow) }
      size = size << 4 | digit
      i += 1
    }
    guard i > range.lowerBound else { throw refuse(i < end ? input[i] : 0, .invalidChunkSize) }
    try parseChunkExtensions(input, i..<end)
    return size
  }

  /// `*( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )` with ext-val = token / quoted-string.
  private static func parseChunkExtensions(_ input: UnsafeRawBufferPointer, _ range: Range<Int>)
    throws(HTTPParserError)
  {
    let end = range.upperBound
    var i = range.lowerBound
    func skipWhitespace() { while i < end, ASCII.isWhitespace(input[i]) { i += 1 } }
    func fail() -> HTTPParserError { refuse(i < end ? input[i] : 0, .invalidChunkSize) }
    func token() throws(HTTPParserError) {
      let start = i
      while i < end, ASCII.isTchar(input[i]) { i += 1 }
      if i == start { throw fail() }
    }
    while i < end {
      skipWhitespace()
      guard i < end, input[i] == ASCII.semicolon else { throw fail() }
      i += 1
      skipWhitespace()
      try token()
      skipWhitespace()
      guard i < end, input[i] == ASCII.equals else { continue }
      i += 1
      skipWhitespace()
      guard i < end, input[i] == ASCII.quote else {
        try token()
        continue
      }
      i += 1
      while true {
        guard i < end else { throw fail() }
        let b = input[i]
        if b == ASCII.quote { break }
        if b == ASCII.backslash {
          i += 1
          guard i < end else { throw fail() }
        }
        guard ASCII.isFieldValueByte(input[i]) else { throw fail() }
        i += 1
      }
      i += 1
    }
  }
}

/// Collects what the framing and connection decisions need while the header fields go by.
struct FramingBuilder {
  let version: HTTPVersion
  var contentLength: UInt64? = nil
  var sawTransferEncoding = false
  var codings = 0
  var chunkedCount = 0
  var lastIsChunked = false
  var hosts = 0
  var close = false
  var keepAliveToken = false
  var expectsContinue = false

  init(version: HTTPVersion) { self.version = version }

  var keepAlive: Bool { version == .http1_1 ? !close : keepAliveToken && !close }

  mutating func inspect(_ input: UnsafeRawBufferPointer, name: Range<Int>, value: Range<Int>)
    throws(HTTPParserError)
  {
    // Dispatch on the length first: most fields are none of these.
    switch name.count {
    case 4 where input.equalsIgnoringCase(name, "host"):
      hosts += 1
    case 6 where input.equalsIgnoringCase(name, "expect"):
      if version == .http1_1, input.equalsIgnoringCase(value, "100-continue") { expectsContinue = true }
    case 10 where input.equalsIgnoringCase(name, "connection"):
      try input.forEachListElement(value) { token throws(HTTPParserError) in
        if input.equalsIgnoringCase(token, "close") { close = true }
        if input.equalsIgnoringCase(token, "keep-alive") { keepAliveToken = true }
      }
    case 14 where input.equalsIgnoringCase(name, "content-length"):
      try addContentLength(input, value)
    case 17 where input.equalsIgnoringCase(name, "transfer-encoding"):
      sawTransferEncoding = true
      try input.forEachListElement(value) { coding throws(HTTPParserError) in
        for j in coding where !ASCII.isTchar(input[j]) { throw HTTPParserError(.invalidTransferEncoding) }
        codings += 1
        lastIsChunked = input.equalsIgnoringCase(coding, "chunked")
        if lastIsChunked { chunkedCount += 1 }
      }
    default:
      break
    }
  }

  /// `Content-Length = 1*DIGIT`, possibly repeated as a list; every value must be the same.
  private mutating func addContentLength(_ input: UnsafeRawBufferPointer, _ value: Range<Int>)
    throws(HTTPParserError)
  {
    var start = value.lowerBound
    while true {
      var end = start
      while end < value.upperBound, input[end] != ASCII.comma { end += 1 }
      let element = input.trimmingWhitespace(start..<end)
      guard !element.isEmpty else { throw HTTPParserError(.invalidContentLength) }
      var n: UInt64 = 0
      for j in element {
        let d = input[j] &- 0x30
        guard d < 10 else { throw HTTPParserError(.invalidContentLength) }
        let (m, o1) = n.multipliedReportingOverflow(by: 10)
        let (s, o2) = m.addingReportingOverflow(UInt64(d))
        guard !o1, !o2, s <= UInt64(Int64.max) else { throw HTTPParserError(.invalidContentLength) }
        n = s
      }
      if let previous = contentLength, previous != n { throw HTTPParserError(.conflictingContentLength) }
      contentLength = n
      if end == value.upperBound { return }
      start = end + 1
    }
  }

  func framing() throws(HTTPParserError) -> HTTPBodyFraming {
    if version == .http1_1 ? hosts != 1 : hosts > 1 { throw HTTPParserError(.invalidHost) }
    if sawTransferEncoding {
      if contentLength != nil { throw HTTPParserError(.contentLengthWithTransferEncoding) }
      if version == .http1_0 { throw HTTPParserError(.transferEncodingInHTTP10) }
      if codings == 0 { throw HTTPParserError(.invalidTransferEncoding) }
      if !lastIsChunked || chunkedCount > 1 { throw HTTPParserError(.chunkedNotFinal) }
      if codings > 1 { throw HTTPParserError(.unsupportedTransferCoding) }
      return .chunked
    }
    if let contentLength { return .contentLength(contentLength) }
    return .none
  }
}
