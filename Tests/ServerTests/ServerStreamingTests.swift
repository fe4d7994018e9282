import AttachdTesting
import Dispatch
import Foundation
import Glibc
import HTTP
import Server
import Testing

/// Streamed response bodies on real sockets: a producer on another thread, pulled with
/// backpressure by fast and slow readers, stopped when the client leaves.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ServerStreamingTests {
  static func waitFor(_ timeout: Double, _ condition: () -> Bool) -> Bool {
    ServerLiveTests.waitFor(timeout: timeout, condition)
  }

  @Test(arguments: [false, true])
  func aStreamFromAnotherThreadReachesAFastReaderWhole(known: Bool) throws {
    let recorder = Recorder()
    let handler = TestHandler(recorder: recorder)
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    let size = 8_000_000
    for round in 0..<2 {
      try client.send(
        "GET /stream?size=\(size)&chunk=50000&known=\(known ? 1 : 0) HTTP/1.1\r\nHost: t\r\n\r\n")
      let response = try client.readResponse()
      #expect(response.status == 200)
      if known {
        #expect(response["Content-Length"] == String(size))
      } else {
        #expect(response["Transfer-Encoding"] == "chunked")
      }
      #expect(response.body.count == size)
      #expect(response.body == TestHandler.pattern(size), "round \(round)")
      #expect(response["Connection"] == "keep-alive")
    }
    let completions = handler.completions.wait(for: 2)
    #expect(completions.map(\.bytesOut) == [UInt64(size), UInt64(size)])
    #expect(completions.map(\.isComplete) == [true, true])
    #expect(!recorder.all.contains("producer stopped"))
  }

  @Test func aSlowReaderHoldsTheProducerBack() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5, receiveBuffer: 16 * 1024)
    let size = 20_000_000
    try client.send("GET /stream?size=\(size)&chunk=16384 HTTP/1.1\r\nHost: t\r\n\r\n")
    // Not reading: the socket buffers fill, and the producer is asked for nothing more.
    var before = -1
    #expect(
      Self.waitFor(10) {
        let now = PatternProducer.produced.load(ordering: .relaxed)
        defer { before = now }
        usleep(200_000)
        return now > 0 && now == before
      })
    let stalled = PatternProducer.produced.load(ordering: .relaxed)
    #expect(stalled < size / 2, "\(stalled) bytes produced for a client reading nothing")
    // Reading slowly, a little at a time, the producer goes on in step.
    client.readDelay = 2_000
    let response = try client.readResponse()
    #expect(response["Transfer-Encoding"] == "chunked")
    #expect(response.body == TestHandler.pattern(size))
    #expect(PatternProducer.produced.load(ordering: .relaxed) == size)
    #expect(!recorder.all.contains("producer stopped"))
  }

  @Test func aClientLeavingMidStreamStopsTheProducer() throws {
    let recorder = Recorder()
    let handler = TestHandler(recorder: recorder)
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    do {
      let client = try TestConnection.live(port: live.port, timeout: 5)
      try client.send("GET /stream?size=100000000&chunk=65536&delay=2&known=1 HTTP/1.1\r\nHost: t\r\n\r\n")
      var received = 0
      while received < 300_000 { received += try client.readSome(65536).count }
    }
    #expect(recorder.wait(timeout: 5) { $0.contains("producer stopped") }, "\(recorder.all)")
    #expect(!recorder.all.contains("producer done"))
    let completion = try #require(handler.completions.wait(for: 1).first)
    #expect(!completion.isComplete)
    #expect(completion.status == 200)
    #expect(completion.bytesOut < 100_000_000)
    #expect(Self.waitFor(2) { live.server.connectionCount == 0 })
  }

  @Test(arguments: [false, true])
  func aProducerFailingMidStreamClosesTheConnection(known: Bool) throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send(
      "GET /stream?size=1000000&chunk=10000&fail=200000&known=\(known ? 1 : 0) HTTP/1.1\r\nHost: t\r\n\r\n")
    // The head went out; the body ends early with the connection, which no framing allows.
    #expect(throws: TestClientError.self) { try client.readResponse() }
    #expect(recorder.all.contains("producer failed"))
    #expect(!recorder.all.contains("producer stopped"))
  }

  @Test(arguments: [50_000, 140_000])
  func aProducerDeliveringOtherThanTheAnnouncedLengthClosesTheConnection(declared: Int) throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    // 30 000-byte chunks: the second overshoots 50 000; 100 000 fall short of 140 000.
    try client.send("GET /stream?size=100000&chunk=30000&declared=\(declared) HTTP/1.1\r\nHost: t\r\n\r\n")
    // Never a complete response whose framing lies: the connection ends short of it.
    let complete = (try? client.readResponse()) != nil
    #expect(!complete)
    #expect(client.isClosedByPeer())
    // Too much: the producer is stopped mid-way; too little: it finished and heard nothing more.
    #expect(recorder.wait { $0.contains(declared < 100_000 ? "producer stopped" : "producer done") })
  }

  @Test func aKnownLengthBodyEndsWhenItsLengthIsWritten() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /stream?size=100000&chunk=30000&declared=60000 HTTP/1.1\r\nHost: t\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.body == Array(TestHandler.pattern(100_000).prefix(60_000)))
    #expect(response["Connection"] == "keep-alive")
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().text == "hello")
  }

  @Test func aHEADRequestNeverPullsTheBody() throws {
    let recorder = Recorder()
    let live = try LiveServer(handler: TestHandler(recorder: recorder))
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("HEAD /stream?size=5000&known=1 HTTP/1.1\r\nHost: t\r\n\r\n")
    let head = try client.readResponse(forHead: true)
    #expect(head["Content-Length"] == "5000")
    #expect(recorder.wait { $0.contains("producer stopped") })
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().text == "hello")
    #expect(PatternProducer.produced.load(ordering: .relaxed) == 0)
  }

  @Test func anHTTP10ClientGetsAnUnknownLengthBodyDelimitedByClose() throws {
    let live = try LiveServer(handler: TestHandler())
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /stream?size=300000&chunk=7000 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    let response = try client.readResponse()
    #expect(response["Connection"] == "close")
    #expect(response["Transfer-Encoding"] == nil)
    #expect(response.body == TestHandler.pattern(300_000))
  }
}
