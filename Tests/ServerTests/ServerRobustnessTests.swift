import AttachdTesting
import Foundation
import Glibc
import Server
import Testing

/// Hostile and broken input must never take the server down.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ServerRobustnessTests {
  /// A small deterministic generator, so a failure can be replayed.
  struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  static let fragments = [
    "GET / HTTP/1.1\r\n", "POST /echo HTTP/1.1\r\n", "Host: t\r\n", "Content-Length: 5\r\n",
    "Content-Length: 99999999999999999999\r\n", "Transfer-Encoding: chunked\r\n", "Expect: 100-continue\r\n",
    "\r\n", "5\r\nhello\r\n", "0\r\n\r\n", "fffffffffffffffff\r\n", "\r", "\n", " ", "\0", "GET /slow?ms=1",
    "Connection: close\r\n", "X-Request-Id: \u{7f}\r\n", ":", "HTTP/9.9\r\n",
  ]

  @Test func randomGarbageAndTruncatedRequestsNeverStopTheServer() throws {
    let live = try LiveServer(
      {
        $0.headerTimeout = .milliseconds(500)
        $0.bodyIdleTimeout = .milliseconds(500)
        $0.lingerTimeout = .milliseconds(200)
      }, handler: TestHandler())
    defer { live.stop() }
    var random = SplitMix(state: 2026)
    for _ in 0..<200 {
      guard let client = try? TestConnection.live(port: live.port, timeout: 0.05) else { continue }
      var bytes: [UInt8] = []
      for _ in 0..<Int.random(in: 1...12, using: &random) {
        if Bool.random(using: &random) {
          bytes += Array(Self.fragments.randomElement(using: &random)!.utf8)
        } else {
          bytes += (0..<Int.random(in: 1...64, using: &random)).map { _ in
            UInt8.random(in: 0...255, using: &random)
          }
        }
      }
      try? client.send(bytes)
      if Bool.random(using: &random) { _ = try? client.readResponse() }
    }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().text == "hello")
    #expect(ServerLiveTests.waitFor(timeout: 5) { live.server.connectionCount == 1 })
  }
}
