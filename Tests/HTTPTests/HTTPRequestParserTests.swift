import HTTP
import Testing

@Suite struct HTTPRequestParserTests {
  @Test func simpleGetGivesHeadThenEnd() throws {
    let seen = parseAtEverySplit("GET /v1/attachments/x?y=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n")
    #expect(seen.count == 2)
    guard case .head(let head) = try #require(seen.first) else {
      Issue.record("no head")
      return
    }
    #expect(head.method == "GET")
    #expect(head.target == "/v1/attachments/x?y=1")
    #expect(head.path == "/v1/attachments/x")
    #expect(head.version == .http1_1)
    #expect(head.headers == ["Host": "a", "Accept": "*/*"])
    #expect(head.framing == .none)
    #expect(head.keepAlive)
    #expect(!head.expectsContinue)
    #expect(seen.last == .end(trailers: [:]))
  }

  @Test func fieldValuesLoseSurroundingWhitespaceButKeepInnerSpaces() {
    let seen = parseAtEverySplit("GET / HTTP/1.1\r\nHost:a\r\nX-A: \t one  two \t\r\nX-Empty:\r\n\r\n")
    guard case .head(let head) = seen.first else {
      Issue.record("no head")
      return
    }
    #expect(head.headers == ["Host": "a", "X-A": "one  two", "X-Empty": ""])
  }

  @Test func obsTextInValuesIsKeptAsRepairedUTF8() {
    let seen = parseAtEverySplit(Array("GET / HTTP/1.1\r\nHost: a\r\nX: caf\u{e9}\r\n\r\n".utf8))
    guard case .head(let head) = seen.first else {
      Issue.record("no head")
      return
    }
    #expect(head.headers.first(name: "x") == "caf\u{e9}")
  }

  @Test func contentLengthBodyIsDeliveredAndEnds() {
    let seen = parseAtEverySplit("POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world")
    #expect(seen.count == 3)
    guard case .head(let head) = seen.first else {
      Issue.record("no head")
      return
    }
    #expect(head.framing == .contentLength(11))
    #expect(seen[1] == .body(Array("hello world".utf8)))
    #expect(seen[2] == .end(trailers: [:]))
  }

  @Test func contentLengthZeroEndsWithoutBody() {
    let seen = parseAtEverySplit("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n")
    #expect(seen.count == 2)
    #expect(seen.last == .end(trailers: [:]))
  }

  @Test func identicalRepeatedContentLengthsAreAccepted() {
    let seen = parseAtEverySplit(
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc")
    guard case .head(let head) = seen.first else {
      Issue.record("no head")
      return
    }
    #expect(head.framing == .contentLength(3))
    #expect(seen[1] == .body(Array("abc".utf8)))
  }

  @Test func bodyEventsPointIntoTheInputWithoutCopying() throws {
    var parser = HTTPRequestParser()
    let bytes = Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcdGET".utf8)
    try bytes.withUnsafeBytes { raw in
      let (head, used) = try parser.next(raw)
      guard case .head = head else {
        Issue.record("no head")
        return
      }
      let rest = UnsafeRawBufferPointer(rebasing: raw[used...])
      let (body, consumed) = try parser.next(rest)
      #expect(body == .body(0..<4))
      #expect(consumed == 4)
      #expect(Array(rest[0..<4]) == Array("abcd".utf8))
    }
  }

  @Test func callerMayStopAfterTheHead() throws {
    var parser = HTTPRequestParser()
    let bytes = Array("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n".utf8)
    let (event, consumed) = try next(&parser, bytes)
    guard case .head(let head) = event else {
      Issue.record("no head")
      return
    }
    #expect(head.framing == .contentLength(100_000))
    #expect(consumed == bytes.count)
  }

  @Test func emptyLinesBeforeTheRequestLineAreSkipped() {
    let seen = parseAtEverySplit("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
    guard case .head(let head) = seen.first else {
      Issue.record("no head: \(seen)")
      return
    }
    #expect(head.target == "/")
  }

  @Test func pipelinedRequestsAreParsedInOrder() {
    let seen = parseAtEverySplit(
      "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nxy"
        + "POST /b HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
        + "GET /c HTTP/1.1\r\nHost: a\r\n\r\n")
    let targets = seen.compactMap { if case .head(let h) = $0 { h.target } else { nil } }
    #expect(targets == ["/a", "/b", "/c"])
    #expect(seen.count == 8)
    #expect(seen[1] == .body(Array("xy".utf8)))
    #expect(seen[4] == .body(Array("abc".utf8)))
    #expect(seen.filter { $0 == .end(trailers: [:]) }.count == 3)
  }

  @Test func incompleteHeadAsksForMoreWithoutConsuming() throws {
    var parser = HTTPRequestParser()
    let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\n".utf8)
    let result = try next(&parser, bytes)
    #expect(result.event == nil)
    #expect(result.consumed == 0)
  }

  @Test func errorsAreStickyUntilTheConnectionCloses() {
    var parser = HTTPRequestParser()
    let bad = Array("GET / HTTP/1.1\r\nHost : a\r\n\r\n".utf8)
    let good = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
    #expect(throws: HTTPParserError(.whitespaceBeforeColon)) {
      _ = try next(&parser, bad)
    }
    #expect(throws: HTTPParserError(.whitespaceBeforeColon)) {
      _ = try next(&parser, good)
    }
  }
}

@Suite struct KeepAliveTests {
  @Test(arguments: [
    ("HTTP/1.1", "", true),
    ("HTTP/1.1", "Connection: close\r\n", false),
    ("HTTP/1.1", "Connection: keep-alive, Close\r\n", false),
    ("HTTP/1.1", "Connection: Upgrade\r\nConnection: close\r\n", false),
    ("HTTP/1.1", "Connection: keep-alive\r\n", true),
    ("HTTP/1.0", "", false),
    ("HTTP/1.0", "Connection: Keep-Alive\r\n", true),
    ("HTTP/1.0", "Connection: foo, keep-alive\r\n", true),
    ("HTTP/1.0", "Connection: keep-alive, close\r\n", false),
  ])
  func connectionHeaderAndVersionDecideKeepAlive(version: String, fields: String, keepAlive: Bool) {
    let seen = parseAtEverySplit("GET / \(version)\r\nHost: a\r\n\(fields)\r\n")
    guard case .head(let head) = seen.first else {
      Issue.record("no head: \(seen)")
      return
    }
    #expect(head.keepAlive == keepAlive)
  }

  @Test(arguments: [
    ("HTTP/1.1", "Expect: 100-continue\r\n", true),
    ("HTTP/1.1", "Expect: 100-Continue\r\n", true),
    ("HTTP/1.1", "", false),
    ("HTTP/1.1", "Expect: something-else\r\n", false),
    // RFC 9110 §10.1.1: a 100-continue expectation in HTTP/1.0 is ignored.
    ("HTTP/1.0", "Expect: 100-continue\r\n", false),
  ])
  func expectHeaderSetsExpectsContinue(version: String, fields: String, expects: Bool) {
    let seen = parseAtEverySplit("PUT / \(version)\r\nHost: a\r\nContent-Length: 1\r\n\(fields)\r\nx")
    guard case .head(let head) = seen.first else {
      Issue.record("no head: \(seen)")
      return
    }
    #expect(head.expectsContinue == expects)
  }

  @Test func http10RequestWithoutHostIsAccepted() {
    let seen = parseAtEverySplit("GET / HTTP/1.0\r\n\r\n")
    guard case .head(let head) = seen.first else {
      Issue.record("no head: \(seen)")
      return
    }
    #expect(head.version == .http1_0)
  }
}
