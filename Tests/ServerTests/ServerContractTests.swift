import AttachdTesting
import Dispatch
import Foundation
import Glibc
import HTTP
import Server
import Synchronization
import Testing

/// The handler contract on real sockets: decisions before the body, body backpressure and
/// the minimum rate, client-gone cancellation. Every read has a timeout, every wait a bound.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ServerContractTests {
  static func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Bool {
    ServerLiveTests.waitFor(timeout: timeout, condition)
  }

  // MARK: Decisions before the body

  @Test func anUnauthenticatedGETAnnouncingAHundredMegabyteBodyGets401AtOnce() throws {
    let handler = TestHandler()
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    let start = Date()
    try client.send(
      Array("GET /auth HTTP/1.1\r\nHost: t\r\nContent-Length: 104857600\r\n\r\n".utf8)
        + [UInt8](repeating: 0x61, count: 200_000))
    let response = try client.readResponse()
    #expect(response.status == 401)
    #expect(Date().timeIntervalSince(start) < 1, "answered after \(Date().timeIntervalSince(start)) s")
    #expect(response["Connection"] == "close")
    // More body after the answer is drained, not reset, until the client leaves.
    _ = client.sendSome([UInt8](repeating: 0x61, count: 100_000))
    #expect(client.isClosedByPeer())
    let completion = try #require(handler.completions.wait(for: 1).first)
    #expect(completion.status == 401)
    #expect(completion.bytesIn == 0)
    #expect(!handler.recorder.all.contains("work /auth"))
  }

  @Test func offloadedWorkAnswersAGETWithABodyWithoutReadingIt() throws {
    let handler = TestHandler()
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send(
      "GET /auth HTTP/1.1\r\nHost: t\r\nAuthorization: x\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n"
    )
    // No 100 Continue: the final answer comes first, and the connection then closes.
    let response = try client.readResponse()
    #expect(response.status == 200)
    #expect(response.text == "authorized")
    #expect(response["Connection"] == "close")
    #expect(client.isClosedByPeer())
    #expect(handler.completions.wait(for: 1).first?.bytesIn == 0)
  }

  @Test func offloadedWorkKeepsTheConnectionForTheNextRequest() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    for _ in 0..<3 {
      try client.send("GET /auth HTTP/1.1\r\nHost: t\r\nAuthorization: x\r\n\r\n")
      let response = try client.readResponse()
      #expect(response.text == "authorized")
      #expect(response["Connection"] == "keep-alive")
    }
  }

  // MARK: Minimum body rate

  @Test func aBodyDrippingABytePerTickIsCutOffByTheMinimumRate() throws {
    let recorder = Recorder()
    let handler = TestHandler(recorder: recorder)
    // Scaled down from "a byte every 29 s against 30 s idle, 256 B/s over 60 s".
    let live = try LiveServer(
      {
        $0.bodyIdleTimeout = .seconds(5)
        $0.minBodyRate = 100
        $0.minBodyRateWindow = .milliseconds(400)
      }, handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n")
    let start = Date()
    let dripping = Flag()
    let stopped = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      defer { stopped.signal() }
      while dripping.isSet && Date().timeIntervalSince(start) < 5 {
        if client.sendSome([0x62]) == 0 { return }
        usleep(100_000)
      }
    }
    // The thread writes to the socket: it must be gone before the socket is closed.
    defer {
      dripping.clear()
      stopped.wait()
    }
    let response = try client.readResponse()
    let elapsed = Date().timeIntervalSince(start)
    #expect(response.status == 408)
    #expect(elapsed >= 0.35 && elapsed < 2, "cut off after \(elapsed) s")
    #expect(recorder.wait { $0.contains { $0.hasPrefix("aborted ") } })
    #expect(handler.completions.wait(for: 1).first?.condition == .requestTimeout)
  }

  @Test func aBodyKeepingTheMinimumRateIsNotCutOff() throws {
    let live = try LiveServer(
      {
        $0.bodyIdleTimeout = .seconds(5)
        $0.minBodyRate = 100
        $0.minBodyRateWindow = .milliseconds(400)
      }, handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1500\r\n\r\n")
    // 50 bytes every 100 ms = 500 B/s for 3 s: five times the minimum, over seven windows.
    for _ in 0..<30 {
      try client.send([UInt8](repeating: 1, count: 50))
      usleep(100_000)
    }
    let response = try client.readResponse()
    #expect(response.status == 200)
    #expect(response.text == "len=1500 sum=1500")
  }

  // MARK: Backpressure

  @Test func aPausedConsumerStopsTheServerReadingUntilItResumes() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let total = 16 << 20
    let client = try TestConnection.live(port: live.port, timeout: 1)
    try client.send(
      "POST /pause?at=first&resume=gate HTTP/1.1\r\nHost: t\r\nContent-Length: \(total)\r\n\r\n")
    let body = TestHandler.pattern(total)
    // The consumer pauses after its first slice: the kernel buffers fill and the client's
    // sends stall (1 s send timeout) long before the whole body is out.
    var sent = 0
    while sent < total {
      let n = client.sendSome(Array(body[sent..<min(total, sent + (1 << 20))]))
      sent += n
      if n < 1 << 20 { break }
    }
    #expect(sent < total, "the server took all \(sent) bytes while paused")
    #expect(recorder.all.contains { $0.hasPrefix("paused after") })
    // Nothing more is read while paused, however long it lasts: the buffers stay full.
    usleep(300_000)
    let late = client.sendSome(Array(body[sent..<min(total, sent + (1 << 20))]))
    #expect(late < 1 << 20, "the server read on while paused")
    sent += late
    #expect(!recorder.all.contains { $0.hasPrefix("end") || $0.hasPrefix("aborted") })
    BackpressureConsumer.gate.signal()
    // Summing 16 MB takes a while in a debug build.
    client.setTimeout(20)
    try client.send(Array(body[sent...]))
    let response = try client.readResponse()
    #expect(response.status == 200)
    #expect(response.text == "len=\(total) sum=\(body.reduce(0) { $0 &+ Int($1) })")
    #expect(recorder.all.contains("resumed"))
  }

  @Test func aConsumerPausedOnTheLastSliceHearsTheEndWhenItResumes() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    // The whole body comes in the first slice; the consumer pauses on it. No byte follows, so
    // only the resume itself can let the parser deliver the end.
    try client.send("POST /pause?at=first&resume=200 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello")
    let response = try client.readResponse()
    #expect(response.status == 200)
    #expect(response.text == "len=5 sum=532")
    #expect(recorder.all.contains("end 5"))
  }

  @Test func aConsumerPausedAtItsStartSendsItsInterimFirstAnd100OnlyOnResume() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    let start = Date()
    try client.send(
      "POST /pause?at=start&resume=300&interim=1 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
        + "Expect: 100-continue\r\n\r\n")
    let interim = try client.readResponse()
    #expect(interim.status == 104)
    #expect(interim["Location"] == "/uploads/1")
    let proceed = try client.readResponse()
    #expect(proceed.status == 100)
    #expect(Date().timeIntervalSince(start) >= 0.25)
    #expect(recorder.all.contains("resumed"))
    try client.send("hello")
    let response = try client.readResponse()
    #expect(response.text == "len=5 sum=532")
  }

  @Test func timeSpentPausedDoesNotCountAgainstTheBodyTimeouts() throws {
    let recorder = Recorder()
    let live = try LiveServer(
      {
        $0.bodyIdleTimeout = .seconds(1)
        $0.minBodyRate = 1000
        $0.minBodyRateWindow = .seconds(1)
      }, handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send(
      "POST /pause?at=first&resume=2500 HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n0123456789")
    // Paused for 2.5 s: two idle timeouts, two rate windows with 10 bytes of 1000. The second
    // half comes 0.3 s after reading resumed: within the second both have left, and late
    // enough for a clock that had counted the pause to have fired.
    #expect(recorder.wait { $0.contains("resumed") })
    usleep(300_000)
    try client.send("0123456789")
    let response = try client.readResponse()
    #expect(response.status == 200)
    #expect(response.text == "len=20 sum=\(2 * Array("0123456789".utf8).reduce(0) { $0 + Int($1) })")
  }

  // MARK: Client gone

  @Test(arguments: [false, true])
  func aClientGoneWhileItsConsumerIsPausedAbortsIt(reset: Bool) throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    do {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      try client.send(
        "POST /pause?at=first&resume=gate HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n12345")
      #expect(recorder.wait { $0.contains("paused after 5") })
      client.close(reset: reset)
    }
    #expect(recorder.wait(timeout: 2) { $0.contains("aborted 5") }, "\(recorder.all)")
    #expect(recorder.all.contains("consumer cancelled"))
    #expect(Self.waitFor(2) { live.server.connectionCount == 0 })
    BackpressureConsumer.gate.signal()
  }

  @Test(arguments: [false, true])
  func aClientGoneWhileWorkIsOffloadedCancelsTheWork(reset: Bool) throws {
    let recorder = Recorder()
    let handler = TestHandler(recorder: recorder)
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    do {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      try client.send("GET /cancellable HTTP/1.1\r\nHost: t\r\n\r\n")
      #expect(recorder.wait { $0.contains("work started") })
      client.close(reset: reset)
    }
    #expect(recorder.wait(timeout: 2) { $0.contains("work cancelled") }, "\(recorder.all)")
    #expect(recorder.all.contains("onCancel"))
    let completion = try #require(handler.completions.wait(for: 1).first)
    #expect(!completion.isComplete)
    #expect(completion.status == 0)
  }

  @Test func aClientThatSendsItsRequestAndFINTogetherStillCancelsTheWork() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /cancellable HTTP/1.1\r\nHost: t\r\n\r\n")
    client.finishSending()
    #expect(recorder.wait(timeout: 3) { $0.contains("work cancelled") }, "\(recorder.all)")
    #expect(client.isClosedByPeer())
  }

  @Test func pipelinedRequestsBeforeAFINAreAllAnswered() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send(
      "GET /slow?ms=200 HTTP/1.1\r\nHost: t\r\n\r\nGET /auth HTTP/1.1\r\nHost: t\r\nAuthorization: x\r\n\r\n"
        + "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    client.finishSending()
    let responses = try (0..<3).map { _ in try client.readResponse() }
    #expect(responses.map(\.text) == ["slow", "authorized", "hello"])
    #expect(client.isClosedByPeer())
    #expect(Self.waitFor(2) { live.server.connectionCount == 0 })
  }

  @Test func aCompletedRequestIsNeverCancelledLater() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    do {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nok")
      #expect(try client.readResponse().status == 200)
    }
    #expect(Self.waitFor(2) { live.server.connectionCount == 0 })
    #expect(!recorder.all.contains { $0.hasPrefix("aborted") || $0 == "consumer cancelled" })
  }
}
