import HTTP
import Testing

@Suite struct MultipartParserTests {
  @Test func fieldAndFilePartsWithPreambleAndEpilogueAreParsed() {
    let seen = parseMultipartAtEverySplit(
      "This is the preamble.\r\n--XyZ\r\n"
        + "Content-Disposition: form-data; name=\"caption\"\r\n\r\n"
        + "a cat\r\n--XyZ\r\n"
        + "Content-Disposition: form-data; name=\"file\"; filename=\"cat.jpg\"\r\n"
        + "Content-Type: image/jpeg\r\n\r\n"
        + "\u{FF}\u{D8}\r\n-\r\n--\r\n--Xy--XyZz\u{FF}\u{D9}\r\n--XyZ--\r\nThe epilogue.\r\n--XyZ\r\n")
    let file = Array("\u{FF}\u{D8}\r\n-\r\n--\r\n--Xy--XyZz\u{FF}\u{D9}".utf8)
    #expect(
      seen == [
        .begin(
          MultipartPartHead(headers: ["Content-Disposition": "form-data; name=\"caption\""], name: "caption")),
        .body(Array("a cat".utf8)), .partEnd,
        .begin(
          MultipartPartHead(
            headers: [
              "Content-Disposition": "form-data; name=\"file\"; filename=\"cat.jpg\"",
              "Content-Type": "image/jpeg",
            ], name: "file", filename: "cat.jpg", contentType: "image/jpeg")),
        .body(file), .partEnd, .end,
      ])
  }

  @Test func curlStyleBodyStartingWithTheBoundaryIsParsed() {
    let seen = parseMultipartAtEverySplit(
      "--XyZ\r\nContent-Disposition: form-data; name=f; filename=a.png\r\n\r\nPNG\r\n--XyZ--\r\n")
    #expect(seen.count == 4)
    guard case .begin(let head) = seen.first else {
      Issue.record("\(seen)")
      return
    }
    #expect(head.name == "f")
    #expect(head.filename == "a.png")
    #expect(seen[1] == .body(Array("PNG".utf8)))
  }

  @Test func transportPaddingAfterTheBoundaryIsIgnored() {
    let seen = parseMultipartAtEverySplit("--XyZ \t \r\n\r\nx\r\n--XyZ\t\r\n\r\ny\r\n--XyZ--")
    #expect(
      seen == [.begin(.init()), .body([0x78]), .partEnd, .begin(.init()), .body([0x79]), .partEnd, .end])
  }

  @Test func emptyPartsAndPartsWithoutHeadersAreParsed() {
    let seen = parseMultipartAtEverySplit(
      "--XyZ\r\n\r\n\r\n--XyZ\r\nContent-Type: text/plain\r\n\r\n\r\n--XyZ--")
    #expect(
      seen == [
        .begin(.init()), .partEnd,
        .begin(.init(headers: ["Content-Type": "text/plain"], contentType: "text/plain")),
        .partEnd, .end,
      ])
  }

  @Test func bodyWithoutPartsIsJustTheCloseDelimiter() {
    #expect(parseMultipartAtEverySplit("--XyZ--") == [.end])
    #expect(parseMultipartAtEverySplit("preamble\r\n--XyZ--\r\n") == [.end])
  }

  @Test func binaryPartsSplitAtEveryPositionKeepEveryByte() {
    // Bytes that look like the start of a delimiter (CR, LF, dashes, boundary prefixes).
    var payload: [UInt8] = []
    for i in 0..<300 { payload.append(UInt8(truncatingIfNeeded: i * 7 + 13)) }
    payload += Array("\r\n--Boundar\r\n--\r\r\n-".utf8)
    let body =
      Array("--Boundary\r\nContent-Disposition: form-data; name=\"b\"\r\n\r\n".utf8) + payload
      + Array("\r\n--Boundary--".utf8)
    let seen = parseMultipartAtEverySplit(body, boundary: "Boundary")
    #expect(seen.count == 4)
    #expect(seen[1] == .body(payload))
  }

  @Test func manyPartsAreParsedInOrder() {
    let body = (0..<60).map { "--XyZ\r\nContent-Disposition: form-data; name=\"p\($0)\"\r\n\r\nv\($0)\r\n" }
      .joined()
    let seen = feedMultipart([Array((body + "--XyZ--").utf8)[...]], boundary: "XyZ")
    let names = seen.compactMap { if case .begin(let h) = $0 { h.name } else { nil } }
    #expect(names == (0..<60).map { "p\($0)" })
    #expect(seen.last == .end)
  }

  @Test func onlyAPossibleDelimiterPrefixIsHeldBack() throws {
    var parser = try MultipartParser(boundary: "Boundary")
    _ = try next(&parser, Array("--Boundary\r\n\r\n".utf8))
    let (a, usedA) = try next(&parser, Array("abc\r\n--Bou".utf8))
    #expect(a == .partBody(0..<3))
    #expect(usedA == 3)
    let (b, usedB) = try next(&parser, Array("\r\n--Bou".utf8))
    #expect(b == nil && usedB == 0)
    let (c, usedC) = try next(&parser, Array("\r\n--Box\r".utf8))
    #expect(c == .partBody(0..<7))
    #expect(usedC == 7)
  }

  @Test func epilogueIsConsumedWithoutEvents() throws {
    var parser = try MultipartParser(boundary: "XyZ")
    _ = try next(&parser, Array("--XyZ".utf8))
    #expect(try next(&parser, Array("--".utf8)) == (.end, 2))
    #expect(parser.isComplete)
    let (event, consumed) = try next(&parser, Array("\r\nanything --XyZ\r\n".utf8))
    #expect(event == nil && consumed == 18)
    try parser.finish()
  }

  @Test(arguments: [
    "--XyZ\r\n\r\nbody",
    "--XyZ\r\n\r\nbody\r\n--XyZ",
    "--XyZ\r\n\r\nbody\r\n--XyZ-",
    "--XyZ\r\nContent-Type: a\r\n",
    "preamble only",
    "",
  ])
  func missingCloseDelimiterIsAnErrorAtFinish(body: String) {
    #expect(parseMultipartAtEverySplit(body).last == .error(.missingFinalBoundary))
  }

  @Test(arguments: [
    "--XyZx\r\n\r\n\r\n--XyZ--",
    "--XyZ\r\n\r\nbody\r\n--XyZ-x",
    "--XyZ\r\n\r\nbody\r\n--XyZz\r\n",
    "--XyZ \r\n\r\n\r\n--XyZ -- ",
    "--XyZ\rx\n\r\n--XyZ--",
  ])
  func junkAfterADelimiterIsRefused(body: String) {
    #expect(parseMultipartAtEverySplit(body).last == .error(.invalidDelimiter))
  }

  @Test(arguments: [
    "--XyZ\r\nContent-Type a\r\n\r\n\r\n--XyZ--",
    "--XyZ\r\n Content-Type: a\r\n\r\n\r\n--XyZ--",
    "--XyZ\r\nX: a\u{0}\r\n\r\n\r\n--XyZ--",
    "--XyZ\r\nX: a\n\r\n\r\n--XyZ--",
  ])
  func malformedPartHeadersAreRefused(body: String) {
    #expect(parseMultipartAtEverySplit(body).last == .error(.invalidPartHeader))
  }
}

@Suite struct MultipartLimitTests {
  @Test func partCountOverTheLimitIsRefused() {
    let body = String(repeating: "--XyZ\r\n\r\nv\r\n", count: 4) + "--XyZ--"
    #expect(parseMultipartAtEverySplit(body, limits: .init(maxParts: 4)).last == .end)
    #expect(parseMultipartAtEverySplit(body, limits: .init(maxParts: 3)).last == .error(.tooManyParts))
  }

  @Test func partBodyOverTheLimitIsRefused() {
    let body = "--XyZ\r\n\r\n0123456789\r\n--XyZ\r\n\r\n01234567890\r\n--XyZ--"
    let seen = parseMultipartAtEverySplit(body, limits: .init(maxPartBytes: 10))
    #expect(seen.last == .error(.partTooLarge))
    #expect(seen.first == .begin(.init()))
    #expect(seen.contains(.body(Array("0123456789".utf8))))
    #expect(seen.dropLast().last == .begin(.init()))
  }

  @Test func wholeBodyOverTheLimitIsRefused() {
    let body = "--XyZ\r\n\r\n0123456789\r\n--XyZ--"
    #expect(parseMultipartAtEverySplit(body, limits: .init(maxTotalBytes: body.utf8.count)).last == .end)
    let seen = parseMultipartAtEverySplit(body, limits: .init(maxTotalBytes: body.utf8.count - 1))
    #expect(seen.last == .error(.bodyTooLarge))
  }

  @Test func partHeaderBlockOverTheLimitIsRefused() {
    let body = "--XyZ\r\nX: " + String(repeating: "h", count: 100) + "\r\n\r\n\r\n--XyZ--"
    let seen = parseMultipartAtEverySplit(body, limits: .init(maxPartHeaderBytes: 64))
    #expect(seen.last == .error(.partHeaderTooLarge))
  }

  @Test func tooManyPartHeaderFieldsAreRefused() {
    let body = "--XyZ\r\n" + String(repeating: "X: y\r\n", count: 5) + "\r\n\r\n--XyZ--"
    #expect(parseMultipartAtEverySplit(body, limits: .init(maxPartHeaderFields: 5)).last == .end)
    let seen = parseMultipartAtEverySplit(body, limits: .init(maxPartHeaderFields: 4))
    #expect(seen.last == .error(.tooManyPartHeaderFields))
  }

  @Test func endlessTransportPaddingIsRefused() {
    let body = "--XyZ" + String(repeating: " ", count: 300) + "\r\n\r\n\r\n--XyZ--"
    #expect(parseMultipartAtEverySplit(body).last == .error(.invalidDelimiter))
  }
}
