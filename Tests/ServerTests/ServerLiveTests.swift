import AttachdTesting
import Dispatch
import Foundation
import Glibc
import HTTP
import Server
import Synchronization
import Testing

/// The server on real sockets on 127.0.0.1, driven by raw client sockets. Every read has a
/// receive timeout and every wait a bound.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ServerLiveTests {
  @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    for i in 0..<5 {
      try client.send("GET /hello?i=\(i) HTTP/1.1\r\nHost: t\r\n\r\n")
      let response = try client.readResponse()
      #expect(response.status == 200)
      #expect(response.text == "hello")
      #expect(response["Connection"] == "keep-alive")
      #expect(response["Date"] != nil)
    }
    #expect(live.server.connectionCount == 1)
  }

  @Test func pipelinedRequestsGetTheirResponsesInOrder() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    // The middle request is answered late from the worker pool; order must still hold.
    try client.send(
      "GET /hello HTTP/1.1\r\nHost: t\r\nX-Request-Id: one\r\n\r\n"
        + "POST /slow?ms=150 HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nX-Request-Id: two\r\n\r\nabc"
        + "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nX-Request-Id: three\r\n\r\nhi")
    let responses = try (0..<3).map { _ in try client.readResponse() }
    #expect(responses.map(\.text) == ["hello", "slow", "len=2 sum=209"])
    #expect(responses.map { $0["X-Request-Id"] } == ["one", "two", "three"])
  }

  @Test func aChunkedUploadWithATrailerReachesTheConsumer() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
    try client.send("5;ext=1\r\nhello\r\n")
    usleep(20_000)
    try client.send("6\r\n world\r\n0\r\nChecksum: abc123\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == 200)
    let expectedSum = Array("hello world".utf8).reduce(0) { $0 + Int($1) }
    #expect(response.text == "len=11 sum=\(expectedSum)")
    #expect(response["X-Trailer-Checksum"] == "abc123")
  }

  @Test func expectContinueGets100ThenTheFinalResponse() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
    let interim = try client.readResponse()
    #expect(interim.status == 100)
    try client.send("abcd")
    let final = try client.readResponse()
    #expect(final.status == 200)
    #expect(final.text == "len=4 sum=394")
  }

  @Test(arguments: [
    ("/limited", "Content-Length: 5000\r\n", 413),
    ("/auth", "Content-Length: 10\r\n", 401),
  ])
  func aRefusedExpectContinueGetsNo100AndTheBodyIsNeverRead(path: String, length: String, status: Int) throws
  {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST \(path) HTTP/1.1\r\nHost: t\r\n\(length)Expect: 100-continue\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == status)
    #expect(response["Connection"] == "close")
    #expect(client.isClosedByPeer())
    #expect(client.unread.isEmpty)
    #expect(
      !recorder.all.contains { $0.hasPrefix("consumer") || $0.hasPrefix("end") || $0.hasPrefix("aborted") })
  }

  @Test func aTooLargeContentLengthGets413BeforeAnyBodyIsSent() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    // Only the head: the answer must not wait for 10 MB that never comes.
    try client.send("POST /limited HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == 413)
    #expect(response["Connection"] == "close")
    #expect(client.isClosedByPeer())
    #expect(!recorder.all.contains { $0.hasPrefix("consumer") })
  }

  @Test func anEarlyAnswerSurvivesABodyTheClientAlreadySent() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    for _ in 0..<5 {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      // No Expect: the whole body is on its way before the 413 is written. Closing with it
      // unread would reset the connection and could destroy the 413 in the client's buffer.
      try client.send(
        Array("POST /limited HTTP/1.1\r\nHost: t\r\nContent-Length: 300000\r\n\r\n".utf8)
          + [UInt8](repeating: 1, count: 100_000))
      usleep(50_000)
      // The rest arrives after the answer: it must not turn into a reset that eats the 413.
      try? client.send([UInt8](repeating: 1, count: 200_000))
      usleep(20_000)
      let response = try client.readResponse()
      #expect(response.status == 413)
      #expect(client.isClosedByPeer())
    }
  }

  @Test func afterAnEarlyAnswerTheServerReadsAndDropsTheRestUntilTheClientCloses() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /limited HTTP/1.1\r\nHost: t\r\nContent-Length: 900000\r\n\r\n")
    #expect(try client.readResponse().status == 413)
    // Our side of the connection is finished (EOF) …
    #expect(client.isClosedByPeer())
    // … yet the late body is still taken without a reset.
    for _ in 0..<8 {
      try client.send([UInt8](repeating: 2, count: 100_000))
      usleep(5_000)
    }
    #expect(live.server.connectionCount == 1)
    client.finishSending()
    #expect(Self.waitFor { live.server.connectionCount == 0 })
  }

  @Test func aHugeHeaderBlockGets431() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    let filler = (0..<90).map { "X-Filler-\($0): \(String(repeating: "a", count: 1000))\r\n" }.joined()
    try? client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\(filler)\r\n")
    let response = try client.readResponse()
    #expect(response.status == 431)
    #expect(response["Content-Type"] == "application/problem+json")
    #expect(response.text.contains("\"status\":431"))
    #expect(client.isClosedByPeer())
  }

  @Test func aMalformedRequestGets400AndClose() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == 400)
    #expect(client.isClosedByPeer())
  }

  @Test func aSlowHeadIsEvictedWith408WithinTheHeaderTimeout() throws {
    let live = try LiveServer({ $0.headerTimeout = .milliseconds(300) }, handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    let start = Date()
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n")
    let response = try client.readResponse()
    let elapsed = Date().timeIntervalSince(start)
    #expect(response.status == 408)
    #expect(client.isClosedByPeer())
    #expect(elapsed >= 0.25 && elapsed < 2, "evicted after \(elapsed) s")
  }

  @Test func anIdleKeptAliveConnectionIsClosed() throws {
    let live = try LiveServer({ $0.keepAliveTimeout = .milliseconds(200) }, handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().status == 200)
    #expect(client.isClosedByPeer())
    #expect(client.unread.isEmpty)
  }

  @Test func aClientGoneMidBodyAbortsTheConsumerWithTheBytesReceived() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    do {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n")
      try client.send([UInt8](repeating: 7, count: 300))
      #expect(recorder.wait { $0.contains("consumer /echo") })
      usleep(50_000)
    }
    #expect(recorder.wait { $0.contains("aborted 300") }, "\(recorder.all)")
    #expect(recorder.all.contains("consumer cancelled"))
    #expect(!recorder.all.contains { $0.hasPrefix("end") })
  }

  @Test func aStalledBodyTimesOutWith408AndAbortsTheConsumer() throws {
    let recorder = Recorder()
    let live = try LiveServer(
      { $0.bodyIdleTimeout = .milliseconds(300) }, handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789")
    let response = try client.readResponse()
    #expect(response.status == 408)
    #expect(recorder.all.contains("aborted 10"))
    #expect(client.isClosedByPeer())
  }

  @Test func aSaturatedWorkerPoolAnswers503WithRetryAfter() throws {
    let gate = DispatchSemaphore(value: 0)
    let live = try LiveServer(
      {
        $0.workerThreads = 1
        $0.workerQueueLength = 1
      }, handler: TestHandler(gate: gate))
    defer { live.stop() }
    // One request runs, one waits in the queue …
    let running = try TestConnection.live(port: live.port, timeout: 5)
    try running.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    let queued = try TestConnection.live(port: live.port, timeout: 5)
    #expect(Self.waitFor { live.server.pool.inFlight == 1 })
    try queued.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(Self.waitFor { live.server.pool.inFlight == 2 })
    // … and the third is refused at once.
    let refused = try TestConnection.live(port: live.port, timeout: 5)
    try refused.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    let response = try refused.readResponse()
    #expect(response.status == 503)
    #expect(response["Retry-After"] == "1")
    #expect(response["Content-Type"] == "application/problem+json")
    gate.signal()
    gate.signal()
    #expect(try running.readResponse().text == "released")
    #expect(try queued.readResponse().text == "released")
  }

  @Test func gracefulDrainFinishesInFlightRequestsAndRefusesNewConnections() throws {
    let live = try LiveServer(handler: TestHandler())
    let idle = try TestConnection.live(port: live.port, timeout: 5)
    let busy = try TestConnection.live(port: live.port, timeout: 5)
    try busy.send("GET /slow?ms=600 HTTP/1.1\r\nHost: t\r\n\r\n")
    usleep(100_000)
    live.server.shutdown()
    #expect(Self.waitFor { live.server.isDraining })
    // The idle connection is closed, and new connections are refused …
    #expect(idle.isClosedByPeer())
    #expect(Self.waitFor { (try? TestConnection.live(port: live.port, timeout: 5)) == nil })
    // … while the in-flight request still gets its whole answer.
    let response = try busy.readResponse()
    #expect(response.status == 200)
    #expect(response.text == "slow")
    #expect(response["Connection"] == "close")
    #expect(live.waitForReturn(timeout: 5))
  }

  @Test func theDrainDeadlineCutsOffRequestsThatTakeTooLong() throws {
    let recorder = Recorder()
    let live = try LiveServer(
      { $0.drainDeadline = .milliseconds(200) }, handler: TestHandler(recorder: recorder))
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n12345")
    #expect(recorder.wait { $0.contains("consumer /echo") })
    let start = Date()
    live.server.shutdown()
    #expect(live.waitForReturn(timeout: 5))
    #expect(Date().timeIntervalSince(start) < 3)
    #expect(recorder.all.contains("aborted 5"))
  }

  @Test func aStuckWorkerJobDoesNotHoldRunPastTheDrainDeadline() throws {
    let gate = DispatchSemaphore(value: 0)
    defer { gate.signal() }
    let live = try LiveServer({ $0.drainDeadline = .milliseconds(200) }, handler: TestHandler(gate: gate))
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(Self.waitFor { live.server.pool.inFlight == 1 })
    live.server.shutdown()
    #expect(live.waitForReturn(timeout: 3))
    #expect(client.isClosedByPeer())
  }

  @Test func connectionsOverTheCapGet503AndAreClosed() throws {
    let handler = TestHandler()
    let live = try LiveServer({ $0.maxConnections = 2 }, handler: handler)
    defer { live.stop() }
    let first = try TestConnection.live(port: live.port, timeout: 5)
    let second = try TestConnection.live(port: live.port, timeout: 5)
    for client in [first, second] {
      try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
      #expect(try client.readResponse().status == 200)
    }
    let third = try TestConnection.live(port: live.port, timeout: 5)
    let response = try third.readResponse()
    #expect(response.status == 503)
    #expect(third.isClosedByPeer())
    #expect(live.server.connectionCount == 2)
    // The refusal is reported like a request with no head (maybe before the second request's
    // completion: that one is recorded after its answer is written).
    let refused = handler.completions.wait(for: 3).first { $0.status == 503 }
    #expect(refused?.condition == .tooManyConnections)
    #expect(refused?.status == 503)
    #expect(refused?.method == "-")
    // Room again once one leaves.
    _ = consume first
    #expect(Self.waitFor { live.server.connectionCount == 1 })
    let fourth = try TestConnection.live(port: live.port, timeout: 5)
    try fourth.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try fourth.readResponse().status == 200)
  }

  @Test func interimResponsesPrecedeTheFinalOne() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /interim HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
    let interim = try client.readResponse()
    #expect(interim.status == 104)
    #expect(interim["Upload-Draft-Interop-Version"] == "6")
    #expect(try client.readResponse().text == "final")
  }

  @Test func eachRequestEndsInOneCompletionWithTheHandlersLabels() throws {
    let handler = TestHandler()
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send(
      "POST /echo HTTP/1.1\r\nHost: t\r\nX-Request-Id: abc.DEF-1_2\r\nContent-Length: 3\r\n\r\nxyz")
    #expect(try client.readResponse()["X-Request-Id"] == "abc.DEF-1_2")
    try client.send("HEAD /hello?secret=1 HTTP/1.1\r\nHost: t\r\n\r\n")
    let head = try client.readResponse(forHead: true)
    // The handler's id (it made one): the server adds the context's headers, never its own.
    let generated = try #require(head["X-Request-Id"])
    #expect(generated.hasPrefix("t-"))
    #expect(head["Content-Length"] == "5")
    let logged = handler.completions.wait(for: 2)
    #expect(logged.count == 2)
    #expect(logged.map(\.method) == ["POST", "HEAD"])
    // The target as sent: stripping the query before logging is the handler's business.
    #expect(logged.map(\.target) == ["/echo", "/hello?secret=1"])
    #expect(logged.map(\.route) == ["/echo", "/hello"])
    #expect(logged.map(\.status) == [200, 200])
    #expect(logged.map(\.isComplete) == [true, true])
    #expect(logged.map(\.bytesIn) == [3, 0])
    #expect(logged.map(\.bytesOut) == [13, 0])
    #expect(logged.map(\.requestID) == ["abc.DEF-1_2", generated])
    #expect(logged.allSatisfy { $0.condition == nil })
    #expect(logged[0].remoteAddress.hasPrefix("127.0.0.1:"))
  }

  @Test func aRequestRefusedBeforeItsHeadIsCompletedToo() throws {
    let handler = TestHandler()
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == 400)
    let entry = try #require(handler.completions.wait(for: 1).first)
    #expect(entry.status == 400)
    #expect(entry.method == "-")
    guard case .malformedRequest = entry.condition else {
      Issue.record("condition \(String(describing: entry.condition))")
      return
    }
    // The handler labelled it when asked for the answer, and put its id on the response.
    #expect(entry.requestID == response["X-Request-Id"])
    #expect(entry.requestID.hasPrefix("t-"))
  }

  @Test func fileRangesAreSentWithSendfileAndHEADGetsOnlyTheHead() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 % 253) }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("attachd-file-\(getpid()).bin")
      .path
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    defer { unlink(path) }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /file?1000,250000,\(path) HTTP/1.1\r\nHost: t\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == 200)
    #expect(response.body == Array(bytes[1000..<251_000]))
    try client.send("HEAD /file?0,5,\(path) HTTP/1.1\r\nHost: t\r\n\r\n")
    let head = try client.readResponse(forHead: true)
    #expect(head["Content-Length"] == "5")
    try client.send("GET /file?0,5,/nonexistent/x HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().status == 500)
    #expect(client.unread.isEmpty)
  }

  @Test func aLargeResponseReachesASlowReaderWhole() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /big?6000000 HTTP/1.1\r\nHost: t\r\n\r\n")
    usleep(200_000)  // let the socket buffers fill so the server must wait for EPOLLOUT
    let response = try client.readResponse()
    #expect(response.body.count == 6_000_000)
    #expect(response.body == TestHandler.pattern(6_000_000))
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().text == "hello")
  }

  @Test func aClientThatStopsReadingIsDroppedAfterTheWriteTimeout() throws {
    let live = try LiveServer({ $0.writeTimeout = .milliseconds(300) }, handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /big?20000000 HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(Self.waitFor { live.server.connectionCount == 1 })
    #expect(Self.waitFor(timeout: 5) { live.server.connectionCount == 0 })
  }

  @Test func readingStopsWhileAResponseIsPending() throws {
    let gate = DispatchSemaphore(value: 0)
    let live = try LiveServer(handler: TestHandler(gate: gate))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 1)
    try client.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(Self.waitFor { live.server.pool.inFlight == 1 })
    // A pipelined flood behind the pending request: the server must leave it in the socket, so
    // the client's sends stall (1 s send timeout) long before 256 MB.
    let chunk = [UInt8](repeating: 0x41, count: 1 << 20)
    var sent = 0
    while sent < 256, (try? client.send(chunk)) != nil { sent += 1 }
    #expect(sent < 256, "the server read \(sent) MB while a response was pending")
    gate.signal()
    #expect(try client.readResponse().text == "released")
  }

  @Test func invalidConfigurationsAreRefused() {
    var bad = Server.Configuration()
    bad.host = "not an address"
    #expect(throws: Server.ConfigurationError.self) { try bad.validate() }
    bad = Server.Configuration()
    bad.headerTimeout = .zero
    #expect(throws: Server.ConfigurationError.self) { try bad.validate() }
    bad = Server.Configuration()
    bad.loopCount = 0
    #expect(throws: Server.ConfigurationError.self) { try bad.validate() }
    #expect(throws: Never.self) { try Server.Configuration().validate() }
  }

  static func waitFor(timeout: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if condition() { return true }
      usleep(10_000)
    }
    return condition()
  }
}
