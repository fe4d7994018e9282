import HTTP
import Testing

/// Each shape request smuggling and garbage take is refused with its own error kind, whatever
/// way the bytes are split.
@Suite struct RequestRefusalTests {
  static let smuggling: [(String, String, HTTPParserError.Kind)] = [
    ("CL and TE", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", .contentLengthWithTransferEncoding),
    ("TE and CL", "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", .contentLengthWithTransferEncoding),
    (
      "CL and TE identity", "Content-Length: 4\r\nTransfer-Encoding: identity\r\n",
      .contentLengthWithTransferEncoding
    ),
    ("conflicting CL fields", "Content-Length: 4\r\nContent-Length: 5\r\n", .conflictingContentLength),
    ("conflicting CL list", "Content-Length: 5,6\r\n", .conflictingContentLength),
    ("signed CL", "Content-Length: +5\r\n", .invalidContentLength),
    ("negative CL", "Content-Length: -5\r\n", .invalidContentLength),
    ("CL with trailing junk", "Content-Length: 5x\r\n", .invalidContentLength),
    ("CL with leading junk", "Content-Length: x5\r\n", .invalidContentLength),
    ("CL with inner space", "Content-Length: 5 6\r\n", .invalidContentLength),
    ("hex CL", "Content-Length: 0x5\r\n", .invalidContentLength),
    ("empty CL", "Content-Length: \r\n", .invalidContentLength),
    ("CL list with empty element", "Content-Length: 5,,5\r\n", .invalidContentLength),
    ("CL overflow", "Content-Length: 99999999999999999999\r\n", .invalidContentLength),
    ("CL above Int64", "Content-Length: 9223372036854775808\r\n", .invalidContentLength),
    ("chunked not final", "Transfer-Encoding: chunked, gzip\r\n", .chunkedNotFinal),
    (
      "chunked not final across fields", "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
      .chunkedNotFinal
    ),
    ("chunked twice", "Transfer-Encoding: chunked, chunked\r\n", .chunkedNotFinal),
    ("only identity", "Transfer-Encoding: identity\r\n", .chunkedNotFinal),
    ("misspelled chunked", "Transfer-Encoding: chunk\r\n", .chunkedNotFinal),
    ("gzip before chunked", "Transfer-Encoding: gzip, chunked\r\n", .unsupportedTransferCoding),
    ("empty TE", "Transfer-Encoding: \r\n", .invalidTransferEncoding),
    ("quoted TE", "Transfer-Encoding: \"chunked\"\r\n", .invalidTransferEncoding),
    ("TE with parameter", "Transfer-Encoding: chunked;q=1\r\n", .invalidTransferEncoding),
    ("TE with vertical tab", "Transfer-Encoding: \u{0B}chunked\r\n", .invalidHeaderValue),
    ("space before colon", "Transfer-Encoding : chunked\r\n", .whitespaceBeforeColon),
    ("tab before colon", "Content-Length\t: 5\r\n", .whitespaceBeforeColon),
    ("obs-fold", "X-A: a\r\n b\r\n", .obsoleteLineFolding),
    ("obs-fold with tab", "X-A: a\r\n\tb\r\n", .obsoleteLineFolding),
    ("first line folded", " X-A: a\r\n", .obsoleteLineFolding),
    ("NUL in value", "X-A: a\u{0}b\r\n", .invalidHeaderValue),
    ("DEL in value", "X-A: a\u{7F}b\r\n", .invalidHeaderValue),
    ("ESC in value", "X-A: \u{1B}[31m\r\n", .invalidHeaderValue),
    ("bare CR in value", "X-A: a\rb\r\n", .bareCR),
    ("bare CR in name", "X\rA: b\r\n", .bareCR),
    ("bare LF ends a field", "X-A: a\nContent-Length: 5\r\n", .bareLF),
    ("bare CR ends a field", "X-A: a\rContent-Length: 5\r\n", .bareCR),
    ("empty name", ": a\r\n", .invalidHeaderName),
    ("no colon", "X-A a\r\n", .whitespaceBeforeColon),
    ("no colon at all", "X-A\r\n", .invalidHeaderName),
    ("slash in name", "X/A: a\r\n", .invalidHeaderName),
    ("non-ASCII name", "X-\u{e9}: a\r\n", .invalidHeaderName),
    ("two Hosts", "Host: b\r\n", .invalidHost),
  ]

  @Test(arguments: smuggling)
  func smugglingShapesAreRefused(name: String, fields: String, kind: HTTPParserError.Kind) {
    let message = "POST / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n0\r\n\r\n"
    #expect(errorKind(message) == kind, "\(name)")
    #expect(HTTPParserError(kind).status == (kind == .unsupportedTransferCoding ? 501 : 400))
  }

  @Test func transferEncodingInHTTP10IsRefused() {
    #expect(
      errorKind("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == .transferEncodingInHTTP10
    )
  }

  @Test func http11WithoutHostIsRefused() {
    #expect(errorKind("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n") == .invalidHost)
  }

  static let requestLines: [(String, HTTPParserError.Kind)] = [
    ("GET / HTTP/1.1 ", .invalidRequestLine),
    ("GET  / HTTP/1.1", .invalidRequestLine),
    (" GET / HTTP/1.1", .invalidRequestLine),
    ("GET /", .invalidRequestLine),
    ("GET / HTTP/1.1 extra", .invalidRequestLine),
    ("GET /a b HTTP/1.1", .invalidRequestLine),
    ("GET /\u{0}a HTTP/1.1", .invalidRequestLine),
    ("GET /\u{e9} HTTP/1.1", .invalidRequestLine),
    ("G(T / HTTP/1.1", .invalidRequestLine),
    ("GET / http/1.1", .invalidRequestLine),
    ("GET / HTTP/1.10", .invalidRequestLine),
    ("GET / HTTP/11", .invalidRequestLine),
    ("GET / HTTP/1.x", .invalidRequestLine),
    ("GET / HTTP/2.0", .unsupportedVersion),
    ("GET / HTTP/0.9", .unsupportedVersion),
    ("GET / HTTP/1.2", .unsupportedVersion),
    ("GET /\r HTTP/1.1", .bareCR),
    ("GET / HTTP/1.1\r", .bareCR),
    ("\u{16}\u{03}\u{01}\u{02}\u{00}", .invalidRequestLine),
  ]

  @Test(arguments: requestLines)
  func invalidRequestLinesAreRefused(line: String, kind: HTTPParserError.Kind) {
    #expect(errorKind(line + "\r\nHost: a\r\n\r\n") == kind)
  }

  @Test func unsupportedVersionAnswers505() {
    #expect(HTTPParserError(.unsupportedVersion).status == 505)
  }

  @Test func bareLFRequestLineIsRefused() {
    #expect(errorKind("GET / HTTP/1.1\nHost: a\r\n\r\n") == .bareLF)
    #expect(errorKind("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n") == .bareLF)
    #expect(errorKind("GET / HTTP/1.1\r\nHost: a\r\n\n") == .bareLF)
  }

  @Test func tlsHelloIsRefusedOnTheFirstByte() throws {
    var parser = HTTPRequestParser()
    #expect(throws: HTTPParserError(.invalidRequestLine)) { _ = try next(&parser, [0x16]) }
  }
}

@Suite struct RequestLimitTests {
  @Test func headerBlockOver64KiBIsRefusedWith431() {
    let big = "X-Big: " + String(repeating: "a", count: 65_536) + "\r\n"
    let seen = parseAtEverySplit("GET / HTTP/1.1\r\nHost: a\r\n" + big + "\r\n", everySplit: false)
    #expect(seen == [.error(.headerBlockTooLarge)])
    #expect(HTTPParserError(.headerBlockTooLarge).status == 431)
  }

  @Test func headerBlockOfExactly64KiBIsAccepted() {
    let fieldLine = "Host: a\r\n"
    let filler = 65_536 - fieldLine.utf8.count - "X-Big: \r\n".utf8.count
    let big = "X-Big: " + String(repeating: "a", count: filler) + "\r\n"
    let seen = parseAtEverySplit("GET / HTTP/1.1\r\n" + fieldLine + big + "\r\n", everySplit: false)
    #expect(seen.count == 2)
    let over = "X-Big: " + String(repeating: "a", count: filler + 1) + "\r\n"
    let refused = parseAtEverySplit("GET / HTTP/1.1\r\n" + fieldLine + over + "\r\n", everySplit: false)
    #expect(refused == [.error(.headerBlockTooLarge)])
  }

  @Test func endlessHeaderLineIsRefusedBeforeItEnds() throws {
    var parser = HTTPRequestParser()
    let prefix = Array("GET / HTTP/1.1\r\nHost: a\r\nX: ".utf8)
    let bytes = prefix + [UInt8](repeating: 0x61, count: 65_536)
    #expect(throws: HTTPParserError(.headerBlockTooLarge)) { _ = try next(&parser, bytes) }
  }

  @Test func hundredFieldsAreAcceptedAndOneMoreIsRefused() {
    let hundred = (1..<100).map { "X-\($0): v\r\n" }.joined()
    let ok = parseAtEverySplit("GET / HTTP/1.1\r\nHost: a\r\n" + hundred + "\r\n", everySplit: false)
    guard case .head(let head) = ok.first else {
      Issue.record("no head: \(ok)")
      return
    }
    #expect(head.headers.count == 100)
    let refused = parseAtEverySplit(
      "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n" + hundred + "\r\n", everySplit: false)
    #expect(refused == [.error(.tooManyHeaderFields)])
    #expect(HTTPParserError(.tooManyHeaderFields).status == 431)
  }

  @Test func longRequestLineIsRefusedWith414() throws {
    let target = "/" + String(repeating: "a", count: 8_200)
    let seen = parseAtEverySplit("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n", everySplit: false)
    #expect(seen == [.error(.requestLineTooLong)])
    #expect(HTTPParserError(.requestLineTooLong).status == 414)
    var parser = HTTPRequestParser()
    #expect(throws: HTTPParserError(.requestLineTooLong)) {
      _ = try next(&parser, Array("GET \(target)".utf8))
    }
  }

  @Test func endlessEmptyLinesAreRefused() {
    let seen = parseAtEverySplit(String(repeating: "\r\n", count: 5_000), everySplit: false)
    #expect(seen == [.error(.requestLineTooLong)])
  }

  @Test func slowlyArrivingHeaderIsScannedOnce() throws {
    // 20 000 one-byte reads of a 20 KB head: a rescan per read would be 200 M byte visits.
    let fields = (0..<99).map { "X-\($0): " + String(repeating: "v", count: 190) + "\r\n" }.joined()
    let bytes = Array(("GET / HTTP/1.1\r\nHost: a\r\n" + fields + "\r\n").utf8)
    var parser = HTTPRequestParser()
    let clock = ContinuousClock()
    var got: HTTPRequestParser.Event?
    let elapsed = try clock.measure {
      for n in 1...bytes.count {
        let (event, consumed) = try bytes[..<n].withUnsafeBytes { try parser.next($0) }
        if n < bytes.count { #expect(event == nil && consumed == 0) } else { got = event }
      }
    }
    guard case .head(let head) = got else {
      Issue.record("no head")
      return
    }
    #expect(head.headers.count == 100)
    #expect(elapsed < .seconds(2))
  }
}
