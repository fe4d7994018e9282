import HTTP
import Testing

@testable import Server

@Suite struct CannedResponseTests {
  @Test func rewritingTheDateChangesOnlyTheDate() {
    let response = HTTPResponse(
      status: 503, headers: ["Retry-After": "1"], body: .bytes(Array(#"{"code":"x"}"#.utf8)))
    let old = Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8)
    let new = Array("Mon, 30 Nov 2026 08:00:00 GMT".utf8)
    var canned = CannedResponse(response, date: old)
    var expected: [UInt8] = []
    HTTPResponseWriter.writeResponse(
      status: 503, headers: ["Retry-After": "1"], body: Array(#"{"code":"x"}"#.utf8), keepAlive: false,
      date: new, into: &expected)
    #expect(canned.bytes != expected)
    canned.setDate(new)
    #expect(canned.bytes == expected)
  }
}
