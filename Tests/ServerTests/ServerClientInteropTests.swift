import AttachdTesting
import Foundation
import Glibc
import Testing

@testable import Server

/// The server against real clients: curl and Python's http.client / h11.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ServerClientInteropTests {
  static let curl = "/usr/bin/curl"
  static var python: String? {
    ["/root/.pyenv/shims/python3", "/usr/bin/python3", "/usr/local/bin/python3"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }

  /// `count` bytes (a multiple of 256) of a repeating non-trivial pattern, and their sum.
  static func body(_ count: Int) -> (data: Data, sum: Int) {
    let pattern = (0..<256).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    var data = Data(capacity: count)
    for _ in 0..<count / 256 { data.append(contentsOf: pattern) }
    return (data, pattern.reduce(0) { $0 + Int($1) } * (count / 256))
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: curl)))
  func curlUploadsWithExpectContinue() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let (data, sum) = Self.body(2_000_128)
    let result = try runProcess(
      Self.curl,
      [
        "-sS", "--fail", "-H", "Expect: 100-continue", "--data-binary", "@-",
        "http://127.0.0.1:\(live.port)/echo",
      ], stdin: data)
    #expect(result.status == 0)
    #expect(result.output == "len=2000128 sum=\(sum)")
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: curl)))
  func curlGetsA413WithoutWaitingToSendTheBody() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let (data, _) = Self.body(3_000_000)
    let start = Date()
    let result = try runProcess(
      Self.curl,
      [
        "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Expect: 100-continue",
        "--expect100-timeout", "5", "--data-binary", "@-", "http://127.0.0.1:\(live.port)/limited",
      ], stdin: data)
    #expect(result.output == "413")
    // curl would wait 5 s for a 100 that never comes unless the 413 arrived first.
    #expect(Date().timeIntervalSince(start) < 4)
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: curl)))
  func curlSeesTheEarlyAnswerEvenWhenItSendsTheBodyWithoutWaiting() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let (data, _) = Self.body(5_000_000)
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("attachd-server-\(getpid()).bin")
    try data.write(to: path)
    defer { try? FileManager.default.removeItem(at: path) }
    for _ in 0..<3 {
      // `Expect:` (empty) stops curl from asking for 100-continue: the body streams at once.
      let result = try runProcess(
        Self.curl,
        [
          "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Expect:", "--data-binary", "@\(path.path)",
          "http://127.0.0.1:\(live.port)/limited",
        ])
      #expect(result.output == "413")
    }
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: curl)))
  func curlUploadsChunkedAndReusesTheConnection() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let (data, sum) = Self.body(100_096)
    let url = "http://127.0.0.1:\(live.port)"
    let result = try runProcess(
      Self.curl,
      [
        "-sS", "-H", "Transfer-Encoding: chunked", "--data-binary", "@-", "\(url)/echo", "--next", "-sS",
        "\(url)/hello", "-w", " %{num_connects}",
      ], stdin: data)
    #expect(result.status == 0)
    // The second transfer made no new connection.
    #expect(result.output == "len=100096 sum=\(sum)hello 0")
  }

  @Test(.enabled(if: python != nil))
  func pythonHTTPClientKeepsAliveAndUploadsChunked() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let script = """
      import http.client, sys
      c = http.client.HTTPConnection("127.0.0.1", \(live.port), timeout=5)
      seen = set()
      for i in range(3):
          c.request("GET", "/hello")
          r = c.getresponse()
          assert r.status == 200 and r.read() == b"hello", r.status
          seen.add(id(c.sock))
      def chunks():
          yield b"abc"
          yield b"defg"
      c.request("POST", "/echo", body=chunks(), encode_chunked=True)
      r = c.getresponse()
      print(r.status, r.read().decode(), len(seen))
      """
    let result = try runProcess(Self.python!, ["-c", script])
    #expect(result.status == 0)
    let sum = Array("abcdefg".utf8).reduce(0) { $0 + Int($1) }
    #expect(result.output == "200 len=7 sum=\(sum) 1\n")
  }

  @Test(.enabled(if: python != nil))
  func h11SeesA100ContinueThenTheResponse() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let script = """
      import socket, sys
      try:
          import h11
      except ImportError:
          print("no-h11"); sys.exit(0)
      s = socket.create_connection(("127.0.0.1", \(live.port)), timeout=5)
      c = h11.Connection(h11.CLIENT)
      s.sendall(c.send(h11.Request(method="POST", target="/echo", headers=[
          ("Host", "t"), ("Content-Length", "5"), ("Expect", "100-continue")])))
      events = []
      def next_event():
          while True:
              e = c.next_event()
              if e is h11.NEED_DATA:
                  c.receive_data(s.recv(65536))
                  continue
              return e
      e = next_event()
      events.append(type(e).__name__ + str(e.status_code))
      s.sendall(c.send(h11.Data(data=b"hello")) + c.send(h11.EndOfMessage()))
      e = next_event()
      events.append(type(e).__name__ + str(e.status_code))
      body = b""
      while True:
          e = next_event()
          if isinstance(e, h11.Data): body += e.data
          else: break
      print(" ".join(events), body.decode())
      """
    let result = try runProcess(Self.python!, ["-c", script])
    #expect(result.status == 0)
    if result.output == "no-h11\n" { return }
    #expect(result.output == "InformationalResponse100 Response200 len=5 sum=532\n")
  }

  @Test func sigtermDrainsTheServerAndRunReturns() throws {
    let live = try LiveServer({ $0.handleSignals = true }, handler: TestHandler())
    let busy = try TestConnection.live(port: live.port, timeout: 5)
    // A signal drains every server of the process that handles signals: wait (bounded) until
    // this test's is the only one, so that servers of other suites are not disturbed.
    #expect(
      ServerLiveTests.waitFor(timeout: 20) {
        SignalRelay.registered == [ObjectIdentifier(live.server)]
      })
    try busy.send("GET /slow?ms=300 HTTP/1.1\r\nHost: t\r\n\r\n")
    usleep(50_000)
    kill(getpid(), SIGTERM)
    let response = try busy.readResponse()
    #expect(response.text == "slow")
    #expect(live.waitForReturn(timeout: 5))
    #expect(live.server.isDraining)
  }
}
