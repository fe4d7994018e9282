import Foundation
import HTTP
import Testing

@Suite struct HTTPResponseWriterTests {
  let date = Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)

  func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

  @Test func fixedLengthResponseHasStatusDateConnectionAndLength() {
    var out: [UInt8] = []
    HTTPResponseWriter.writeResponse(
      status: 201, headers: ["Location": "/v1/attachments/att_1", "Content-Type": "application/json"],
      body: Array("{}".utf8), keepAlive: true, date: date, into: &out)
    #expect(
      text(out)
        == "HTTP/1.1 201 Created\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: keep-alive\r\n"
        + "Content-Length: 2\r\nLocation: /v1/attachments/att_1\r\nContent-Type: application/json\r\n\r\n{}")
  }

  @Test func headResponseKeepsTheContentLengthButSendsNoBody() {
    var get: [UInt8] = []
    var head: [UInt8] = []
    let body = [UInt8](repeating: 0xFF, count: 12_345)
    HTTPResponseWriter.writeResponse(status: 200, body: body, keepAlive: true, date: date, into: &get)
    HTTPResponseWriter.writeResponse(
      status: 200, body: body, isHEAD: true, keepAlive: true, date: date, into: &head)
    #expect(text(head).hasSuffix("Content-Length: 12345\r\n\r\n"))
    #expect(Array(get.prefix(head.count)) == head)
    #expect(get.count == head.count + body.count)
  }

  @Test func closingResponseSaysConnectionClose() {
    var out: [UInt8] = []
    HTTPResponseWriter.writeHead(
      status: 400, framing: .contentLength(0), keepAlive: false, date: date, into: &out)
    #expect(text(out).contains("\r\nConnection: close\r\n"))
    #expect(text(out).hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
  }

  @Test func untilCloseFramingForcesConnectionCloseWithoutLength() {
    var out: [UInt8] = []
    HTTPResponseWriter.writeHead(status: 200, framing: .untilClose, keepAlive: true, date: date, into: &out)
    #expect(text(out).contains("Connection: close\r\n"))
    #expect(!text(out).contains("Content-Length") && !text(out).contains("Transfer-Encoding"))
  }

  @Test(arguments: [204, 304])
  func noContentAndNotModifiedCarryNoFraming(status: Int) {
    var out: [UInt8] = []
    HTTPResponseWriter.writeResponse(
      status: status, headers: ["ETag": "\"x\""], body: Array("ignored".utf8), keepAlive: true, date: date,
      into: &out)
    #expect(!text(out).contains("Content-Length") && !text(out).contains("ignored"))
    #expect(text(out).hasSuffix("ETag: \"x\"\r\n\r\n"))
  }

  @Test func chunkedResponseRoundTripsThroughOurOwnParser() throws {
    var out: [UInt8] = []
    HTTPResponseWriter.writeHead(status: 200, framing: .chunked, keepAlive: true, date: date, into: &out)
    #expect(text(out).contains("Transfer-Encoding: chunked\r\n"))
    var body: [UInt8] = []
    let payload = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
    HTTPResponseWriter.writeChunk(payload[..<4096], into: &body)
    HTTPResponseWriter.writeChunk([UInt8](), into: &body)
    HTTPResponseWriter.writeChunkHeader(size: 904, into: &body)
    body += payload[4096...]
    HTTPResponseWriter.writeChunkEnd(into: &body)
    HTTPResponseWriter.writeLastChunk(trailers: ["Digest": "sha-256=x"], into: &body)
    #expect(text(Array(body.prefix(6))) == "1000\r\n")
    // The chunk framing is the same for requests, which our parser reads.
    let request = Array("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + body
    let seen = feedRequest([request[...]])
    #expect(seen.count == 3)
    #expect(seen[1] == .body(payload))
    #expect(seen[2] == .end(trailers: ["Digest": "sha-256=x"]))
  }

  @Test(arguments: [
    (100, "HTTP/1.1 100 Continue\r\n\r\n"),
    (103, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"),
    (104, "HTTP/1.1 104 Upload Resumption Supported\r\nLink: </a.css>; rel=preload\r\n\r\n"),
  ])
  func interimResponsesCarryNoFramingFields(status: Int, expected: String) {
    var out: [UInt8] = []
    let headers: HTTPHeaders =
      status == 100
      ? [:]
      : [
        "Link": "</a.css>; rel=preload", "Content-Length": "5", "Connection": "close",
        "Transfer-Encoding": "chunked",
      ]
    HTTPResponseWriter.writeInterim(status: status, headers: headers, into: &out)
    #expect(text(out) == expected)
  }

  @Test func callerFramingFieldsAreReplacedNotDuplicated() {
    var out: [UInt8] = []
    HTTPResponseWriter.writeHead(
      status: 200, headers: ["content-length": "99", "Date": "x", "CONNECTION": "upgrade", "X-A": "b"],
      framing: .contentLength(3), keepAlive: true, date: date, into: &out)
    let t = text(out)
    #expect(
      t.components(separatedBy: "\r\n").filter { $0.lowercased().hasPrefix("content-length") } == [
        "Content-Length: 3"
      ])
    #expect(!t.contains("Date: x") && !t.contains("upgrade") && t.contains("X-A: b\r\n"))
  }

  @Test func controlCharactersCannotSplitTheResponse() {
    var out: [UInt8] = []
    HTTPResponseWriter.writeHead(
      status: 200, headers: ["X-Id": "a\r\nSet-Cookie: evil", "Bad Name": "x", "X\r\nY": "z"],
      framing: .contentLength(0), keepAlive: true, date: date, into: &out)
    let t = text(out)
    #expect(t.contains("X-Id: a  Set-Cookie: evil\r\n"))
    #expect(!t.contains("Bad Name") && !t.contains("\r\nY"))
  }

  @Test(arguments: [1, 9, 10, 15, 16, 255, 4096, 65_535, 1 << 40, Int.max])
  func chunkSizesAreLowercaseHexWithoutLeadingZeros(size: Int) throws {
    var out: [UInt8] = []
    HTTPResponseWriter.writeChunkHeader(size: size, into: &out)
    #expect(text(out) == String(size, radix: 16) + "\r\n")
  }

  @Test func contentLengthDigitsAreExact() {
    for n in [0, 7, 10, 99, 100, 1_000_000, Int.max] {
      var out: [UInt8] = []
      HTTPResponseWriter.writeHead(
        status: 200, framing: .contentLength(n), keepAlive: true, date: date, into: &out)
      #expect(text(out).contains("Content-Length: \(n)\r\n"))
    }
  }
}

@Suite struct HTTPDateTests {
  @Test func imfFixdateMatchesFoundationForManyInstants() {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
    var cache = HTTPDateCache()
    var seconds: Int64 = 0
    // Every ~3.7 days from 1970 to 2100, plus leap days and year ends.
    var instants: [Int64] = [
      0, 784_111_777, 951_782_400, 951_868_799, 1_709_164_800, 4_102_444_799, 4_102_444_800,
    ]
    while seconds < 4_102_444_800 {
      instants.append(seconds)
      seconds += 320_017
    }
    for s in instants {
      let expected = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(s)))
      let got = String(decoding: cache.bytes(epochSeconds: s), as: UTF8.self)
      if got != expected {
        Issue.record("\(s): \(got) != \(expected)")
        return
      }
    }
    #expect(
      String(decoding: cache.bytes(epochSeconds: 784_111_777), as: UTF8.self)
        == "Sun, 06 Nov 1994 08:49:37 GMT")
  }

  @Test func nowIsTheCurrentSecond() {
    var cache = HTTPDateCache()
    let now = Int64(Date().timeIntervalSince1970)
    let got = cache.now()
    #expect(got == cache.bytes(epochSeconds: now) || got == cache.bytes(epochSeconds: now + 1))
  }
}

@Suite struct ProblemDetailsTests {
  @Test func problemJSONParsesBackWithEveryField() throws {
    let problem = ProblemDetails(
      status: 413, code: "payload_too_large",
      detail: "The body is over 50 MB. \"Quotes\" \\ and \u{1} \n\t\u{1F431}",
      instance: "req_123")
    let object = try #require(JSONSerialization.jsonObject(with: Data(problem.json)) as? [String: Any])
    #expect(object["type"] as? String == "about:blank")
    #expect(object["status"] as? Int == 413)
    #expect(object["code"] as? String == "payload_too_large")
    #expect(object["title"] as? String == "Content Too Large")
    #expect(object["detail"] as? String == problem.detail)
    #expect(object["instance"] as? String == "req_123")
  }

  @Test func allControlCharactersAreEscaped() throws {
    let detail = String((0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) })
    let problem = ProblemDetails(status: 400, code: "malformed", detail: detail)
    #expect(!problem.json.contains { $0 < 0x20 })
    let object = try #require(JSONSerialization.jsonObject(with: Data(problem.json)) as? [String: Any])
    #expect(object["detail"] as? String == detail)
  }

  @Test func optionalFieldsAreLeftOut() {
    let json = String(decoding: ProblemDetails(status: 404, code: "not_found").json, as: UTF8.self)
    #expect(json == #"{"type":"about:blank","status":404,"code":"not_found","title":"Not Found"}"#)
  }

  @Test func problemResponseHasTheProblemMediaTypeAndLength() {
    var out: [UInt8] = []
    let problem = ProblemDetails(status: 431, code: "header_too_large")
    problem.writeResponse(keepAlive: false, date: Array("d".utf8), into: &out)
    let t = String(decoding: out, as: UTF8.self)
    #expect(t.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
    #expect(t.contains("Content-Type: application/problem+json\r\n"))
    #expect(t.contains("Content-Length: \(problem.json.count)\r\n"))
    #expect(t.hasSuffix("\r\n\r\n" + String(decoding: problem.json, as: UTF8.self)))
  }
}
