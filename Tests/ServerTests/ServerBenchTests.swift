import AttachdTesting
import Foundation
import Glibc
import Server
import Testing

/// Rough numbers for the server alone, run by hand:
/// `ATTACHD_SERVER_BENCH=1 swift test --filter ServerBenchTests` (wrk must be installed).
/// The project's real benchmark is `Scripts/bench-http`; this one finds regressions early.
@Suite(
  .serialized, .enabled(if: ProcessInfo.processInfo.environment["ATTACHD_SERVER_BENCH"] != nil),
  .timeLimit(.minutes(3)))
struct ServerBenchTests {
  static func rssKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
  }

  @Test func keepAliveGetThroughputWithWrk() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let result = try runProcess(
      "/usr/bin/wrk", ["-t", "2", "-c", "64", "-d", "5s", "http://127.0.0.1:\(live.port)/hello"], timeout: 30)
    print("wrk keep-alive GET /hello:\n\(result.output)")
    #expect(result.status == 0)
  }

  @Test func tenThousandIdleConnectionsStaySmall() throws {
    let live = try LiveServer({ $0.keepAliveTimeout = .seconds(60) }, handler: TestHandler())
    defer { live.stop() }
    let before = Self.rssKiB()
    // The clients live in another process so that only the server's memory is counted here.
    let script = """
      import socket, sys
      socks = [socket.create_connection(("127.0.0.1", \(live.port))) for _ in range(10000)]
      print("ready", flush=True)
      sys.stdin.read()
      """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script]
    let input = Pipe()
    process.standardInput = input
    try process.run()
    defer {
      try? input.fileHandleForWriting.close()
      process.waitUntilExit()
    }
    #expect(ServerLiveTests.waitFor(timeout: 60) { live.server.connectionCount == 10_000 })
    let after = Self.rssKiB()
    print("10000 idle connections: RSS \(before) KiB → \(after) KiB (+\((after - before) / 1024) MiB)")
    #expect(after - before < 100 * 1024)
  }

  @Test func slowlorisConnectionsDoNotSlowANormalRequest() throws {
    let live = try LiveServer({ $0.headerTimeout = .seconds(60) }, handler: TestHandler())
    defer { live.stop() }
    func latency() throws -> Double {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      var samples: [Double] = []
      for _ in 0..<200 {
        let start = Date()
        try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        _ = try client.readResponse()
        samples.append(Date().timeIntervalSince(start))
      }
      return samples.sorted()[samples.count / 2]
    }
    let quiet = try latency()
    var loris: [TestConnection] = []
    for _ in 0..<300 {
      let c = try TestConnection.live(port: live.port, timeout: 5)
      try c.send("GET / HTTP/1.1\r\nHost: t\r\nX-a: ")
      loris.append(c)
    }
    for round in 0..<3 {
      for c in loris { try c.send("b") }
      _ = round
    }
    let loaded = try latency()
    print(
      "median latency: \(quiet * 1e6) µs quiet, \(loaded * 1e6) µs with 300 slowloris (\(loaded / quiet)×)")
  }
}
