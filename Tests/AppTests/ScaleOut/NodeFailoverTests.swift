import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// The repository's `Config/haproxy.cfg` in front of two real `attachd serve` nodes: a node
/// killed with SIGKILL is out of the pool within 3 s, no request sent after the kill fails (a
/// connection the dead node refuses is sent to the live one), and the node restarted on its
/// port is back in the pool within a few seconds.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NodeFailoverTests {
  static let environment = ["ATTACHD_API_KEYS": "acme:0123456789abcdef", "ATTACHD_ACCESS_LOG": "off"]

  @Test(
    .enabled(if: ServeBinaryTests.binary != nil && HAProxy.executable != nil, "attachd or haproxy missing"))
  func aKilledNodeLeavesThePoolWithinThreeSecondsAndNoLaterRequestFails() throws {
    let first = try ServeBinaryTests().start(
      ["--port", "0", "--data-dir", try LiveTesting.temporaryDirectory() + "/data"],
      environment: Self.environment)
    defer { if first.process.isRunning { first.process.terminate() } }
    let secondDirectory = try LiveTesting.temporaryDirectory() + "/data"
    var second = try ServeBinaryTests().start(
      ["--port", "0", "--data-dir", secondDirectory], environment: Self.environment)
    defer { if second.process.isRunning { second.process.terminate() } }
    let proxy = try HAProxy(shippedConfigurationFor: [first.port, second.port])
    let base = "http://127.0.0.1:\(proxy.port)"
    for _ in 0..<4 { #expect(try LiveTesting.curl(base + "/readyz").status == 200) }

    // Requests go on through the kill; each remembers when it started and what it got.
    let results = Mutex<[(started: Date, seconds: Double, status: Int)]>([])
    let stop = Atomic<Bool>(false)
    let client = Thread {
      while !stop.load(ordering: .relaxed) {
        let started = Date()
        let status = (try? LiveTesting.curl(base + "/readyz").status) ?? 0
        results.withLock { $0.append((started, Date().timeIntervalSince(started), status)) }
      }
    }
    client.start()
    defer { stop.store(true, ordering: .relaxed) }
    Thread.sleep(forTimeInterval: 0.5)
    let killed = Date()
    kill(second.process.processIdentifier, SIGKILL)
    second.process.waitUntilExit()
    let down = LiveTesting.waitUntil(seconds: 3) { proxy.log.contains("attachd2 is DOWN") }
    let downAfter = Date().timeIntervalSince(killed)
    #expect(down, "HAProxy did not mark the killed node down within 3 s: \(proxy.log)")
    Thread.sleep(forTimeInterval: max(0, 2.5 - Date().timeIntervalSince(killed)))
    stop.store(true, ordering: .relaxed)
    Thread.sleep(forTimeInterval: 0.3)
    let after = results.withLock { $0.filter { $0.started > killed.addingTimeInterval(0.05) } }
    #expect(after.count >= 10, "too few requests to judge: \(after.count)")
    #expect(
      after.allSatisfy { $0.status == 200 },
      "\(after.filter { $0.status != 200 }.count) of \(after.count) failed")
    // The one request HAProxy sent to the dead node before it knew waits out HAProxy's retry
    // turn-around (up to 1 s) and is then answered by the live node.
    let slowest = after.map(\.seconds).max() ?? 0
    #expect(slowest < 2, "a request took \(slowest) s")
    print(
      "NodeFailover: down after \(String(format: "%.2f", downAfter)) s, \(after.count) requests after the kill,",
      "all 200, the slowest \(String(format: "%.2f", slowest)) s")

    // The node comes back on its port and rejoins.
    second = try ServeBinaryTests().start(
      ["--port", String(second.port), "--data-dir", secondDirectory], environment: Self.environment)
    let restarted = Date()
    #expect(LiveTesting.waitUntil(seconds: 8) { proxy.log.contains("attachd2 is UP") }, "\(proxy.log)")
    print(
      "NodeFailover: back in the pool \(String(format: "%.2f", Date().timeIntervalSince(restarted))) s after its restart"
    )
  }
}
