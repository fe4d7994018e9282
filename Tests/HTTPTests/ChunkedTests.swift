import HTTP
import Testing

@Suite struct ChunkedTests {
  @Test func chunkedBodyWithExtensionsAndTrailersIsDecoded() {
    let seen = parseAtEverySplit(
      "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "5;name=value\r\nhello\r\n" + "6 ; a = \"q\\\"x\" ;b\r\n world\r\n" + "A\r\n0123456789\r\n"
        + "0;last\r\nDigest: sha-256=abc\r\nX-Count:  3 \r\n\r\n")
    #expect(seen.count == 3)
    guard case .head(let head) = seen.first else {
      Issue.record("no head: \(seen)")
      return
    }
    #expect(head.framing == .chunked)
    #expect(seen[1] == .body(Array("hello world0123456789".utf8)))
    #expect(seen[2] == .end(trailers: ["Digest": "sha-256=abc", "X-Count": "3"]))
  }

  @Test func transferEncodingIsCaseInsensitiveAndListsMayHaveEmptyElements() {
    let seen = parseAtEverySplit(
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , CHUNKED\r\n\r\n1\r\nx\r\n0\r\n\r\n")
    guard case .head(let head) = seen.first else {
      Issue.record("no head: \(seen)")
      return
    }
    #expect(head.framing == .chunked)
    #expect(seen[1] == .body([0x78]))
  }

  @Test func uppercaseAndZeroPaddedChunkSizesAreAccepted() {
    let body = String(repeating: "z", count: 0x1F)
    let seen = parseAtEverySplit(
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0001F\r\n\(body)\r\n000\r\n\r\n")
    #expect(seen.count == 3)
    #expect(seen[1] == .body(Array(body.utf8)))
  }

  @Test(arguments: [
    ("G\r\n", HTTPParserError.Kind.invalidChunkSize),
    ("\r\n", .invalidChunkSize),
    (" 5\r\n", .invalidChunkSize),
    ("0x5\r\n", .invalidChunkSize),
    ("-5\r\n", .invalidChunkSize),
    ("5 \r\n", .invalidChunkSize),
    ("5;\r\n", .invalidChunkSize),
    ("5;a=\r\n", .invalidChunkSize),
    ("5;a=\"open\r\n", .invalidChunkSize),
    ("5;a b\r\n", .invalidChunkSize),
    ("5\rX\r\n", .bareCR),
    ("5\rX\n", .bareLF),
    ("5\n", .bareLF),
    ("5;a=\"x\ry\"\r\n", .bareCR),
    ("8000000000000000\r\n", .chunkSizeOverflow),
    ("FFFFFFFFFFFFFFFFFF\r\n", .chunkSizeOverflow),
    ("5\r\nhelloX\r\n", .missingChunkDataCRLF),
    ("5\r\nhello\rX", .missingChunkDataCRLF),
    ("5\r\nhello\n", .missingChunkDataCRLF),
    ("0\r\nX: a\n\r\n", .bareLF),
    ("0\r\n X: a\r\n\r\n", .obsoleteLineFolding),
    ("0\r\nX : a\r\n\r\n", .whitespaceBeforeColon),
    ("0\r\nX: a\u{0}b\r\n\r\n", .invalidHeaderValue),
  ])
  func malformedChunkedBodiesAreRefused(chunks: String, kind: HTTPParserError.Kind) {
    #expect(errorKind("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks) == kind)
  }

  @Test func largestChunkSizeIsAcceptedAndStreamsUntilTheInputEnds() {
    let seen = parseAtEverySplit(
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n7FFFFFFFFFFFFFFF\r\nabc")
    #expect(seen.count == 2)
    #expect(seen[1] == .body(Array("abc".utf8)))
  }

  @Test func chunkLineLongerThanTheLimitIsRefused() {
    let line = "1;" + String(repeating: "a", count: 200) + "\r\nx\r\n0\r\n\r\n"
    let limits = HTTPRequestParser.Limits(maxChunkLineBytes: 100)
    let message = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + line
    #expect(errorKind(message, limits: limits) == .chunkLineTooLong)
    #expect(errorKind(message) == nil)
  }

  @Test func trailersOverTheLimitAreRefusedWith431() {
    let trailer = "X-Big: " + String(repeating: "b", count: 300) + "\r\n"
    let message = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + trailer + "\r\n"
    let kind = errorKind(message, limits: .init(maxTrailerBytes: 256))
    #expect(kind == .trailersTooLarge)
    #expect(HTTPParserError(.trailersTooLarge).status == 431)
  }

  @Test func tooManyTrailerFieldsAreRefused() {
    let trailers = (0..<5).map { "T\($0): v\r\n" }.joined()
    let message = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + trailers + "\r\n"
    #expect(errorKind(message, limits: .init(maxHeaderFields: 4)) == .tooManyHeaderFields)
  }
}
