import AttachdTesting
import Foundation
import HTTP
import Server
import Synchronization
import Testing

/// The test client itself: its two modes give the same answer to the same request on the same
/// handler, and the in-process mode keeps the handler contract (backpressure, `100 Continue`,
/// resources released once, the pool's overload answer, a client that leaves).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct TestClientTests {
  /// One request as both modes send it.
  struct Request: Sendable, CustomStringConvertible {
    var method: String
    var target: String
    var headers: HTTPHeaders = [:]
    var body: TestBody = .empty
    var description: String { "\(method) \(target)" }
  }

  static let file: String = {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("test-client-\(getpid()).txt")
      .path
    _ = FileManager.default.createFile(atPath: path, contents: Data("0123456789".utf8))
    return path
  }()

  static let requests: [Request] = [
    Request(method: "GET", target: "/hello"),
    Request(method: "HEAD", target: "/hello"),
    Request(method: "GET", target: "/file?2,5,\(file)"),
    Request(method: "GET", target: "/file?0,5,/nowhere"),
    Request(method: "POST", target: "/echo", body: .bytes(TestHandler.pattern(200_000))),
    Request(
      method: "POST", target: "/echo",
      body: .chunked([Array("abc".utf8), TestHandler.pattern(70_000)], trailers: ["Checksum": "x"])),
    Request(method: "POST", target: "/interim", body: .bytes(Array("x".utf8))),
    Request(method: "GET", target: "/chunks?200000"),
    Request(method: "GET", target: "/chunks?1000&known"),
    Request(method: "POST", target: "/limited", body: .bytes(TestHandler.pattern(2000))),
    Request(
      method: "POST", target: "/pause?at=start&resume=20", headers: ["Expect": "100-continue"],
      body: .bytes(TestHandler.pattern(5000))),
    Request(method: "GET", target: "/auth"),
    Request(method: "GET", target: "/auth", headers: ["Authorization": "Bearer x"]),
  ]

  /// What is compared: everything but the `Date` value.
  static func comparable(_ response: TestResponse) -> [String] {
    let fields = response.headers.filter { $0.name != "Date" }.map { "\($0.name): \($0.value)" }
    let interim = response.interim.map { "\($0.status) \($0.headers.map { "\($0.name): \($0.value)" })" }
    return ["\(response.status)"] + fields + interim + [String(decoding: response.body, as: UTF8.self)]
  }

  @Test(arguments: requests)
  func bothModesGiveTheSameAnswerToTheSameRequest(_ request: Request) throws {
    let handler = StreamingHandler()
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let inProcess = TestClient(.inProcess(handler))
    defer { inProcess.shutdown() }
    var answers: [[String]] = []
    for client in [inProcess, TestClient(.live(port: live.port))] {
      let headers = request.headers + ["X-Request-Id": "same"]
      answers.append(
        Self.comparable(
          try client.execute(request.method, request.target, headers: headers, body: request.body)))
    }
    #expect(answers[0] == answers[1])
  }

  @Test func inProcessReadingWaitsForResumeAndContinueComesWithIt() throws {
    let handler = TestHandler()
    let client = TestClient(.inProcess(handler))
    defer { client.shutdown() }
    let exchange = try client.start(
      "POST", "/pause?at=start&resume=300", headers: ["Expect": "100-continue"], framing: .contentLength(6))
    let started = Date()
    let interim = try exchange.readInterim()
    #expect(interim.status == 100)
    #expect(Date().timeIntervalSince(started) >= 0.25)
    try exchange.send(Array("abc".utf8))
    try exchange.send(Array("def".utf8))
    let response = try exchange.response()
    #expect(response.text == "len=6 sum=\("abcdef".utf8.reduce(0) { $0 + Int($1) })")
    #expect(handler.recorder.all.filter { !$0.hasPrefix("head") } == ["paused at start", "resumed", "end 6"])
  }

  @Test func inProcessDeliversNoSliceWhilePaused() throws {
    let handler = TestHandler()
    let client = TestClient(.inProcess(handler))
    defer { client.shutdown() }
    let exchange = try client.start("POST", "/pause?at=first&resume=1000", framing: .contentLength(6))
    try exchange.send(Array("abc".utf8))
    #expect(handler.recorder.wait(timeout: 5) { $0.contains("paused after 3") })
    try exchange.send(Array("def".utf8))
    usleep(100_000)
    #expect(!handler.recorder.all.contains("end 6"))
    #expect(try exchange.response().status == 200)
    #expect(handler.recorder.all.suffix(2) == ["resumed", "end 6"])
  }

  @Test(arguments: ["/hello", "/cpu", "/io"])
  func inProcessReleasesAResourceOnceWhenTheAnswerIsQueuedAndTheWorkDone(path: String) throws {
    let handler = RequestResourceTests.Handler(resource: RequestResourceTests.Resource())
    let client = TestClient(.inProcess(handler))
    defer { client.shutdown() }
    #expect(try client.execute("GET", path).status == 200)
    #expect(handler.resource.count == 1)
    #expect(!handler.resource.overlapped)
    usleep(50_000)
    #expect(handler.resource.count == 1)
  }

  @Test func inProcessShowsAnAnswerSentFromExecuteWithItsResourceAlreadyBack() throws {
    let handler = RequestResourceTests.Handler(resource: RequestResourceTests.Resource())
    let client = TestClient(.inProcess(handler))
    defer { client.shutdown() }
    let response = try client.execute("POST", "/execute", body: .bytes(Array("abc".utf8)))
    #expect(response.status == 200 && response.text == "executed")
    // As on the server: the resource went back when the answer was queued, while the work
    // that sent it was still running.
    #expect(handler.resource.count == 1)
    #expect(handler.resource.overlapped)
  }

  @Test func aFullInProcessCPUPoolAnswersOverloadedAndReleasesTheResource() throws {
    let handler = RequestResourceTests.Handler(resource: RequestResourceTests.Resource())
    var configuration = TestClient.Configuration()
    configuration.cpuThreads = 1
    configuration.cpuQueueLength = 0
    let client = TestClient(.inProcess(handler), configuration: configuration)
    defer {
      handler.gate.signal()
      client.shutdown()
    }
    let busy = try client.connect()
    try busy.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(ServerLiveTests.waitFor(timeout: 5) { client.cpuJobs == 1 })
    #expect(try client.execute("GET", "/cpu").status == 503)
    #expect(handler.resource.count == 1)
    handler.gate.signal()
    #expect(try busy.readResponse().status == 200)
    #expect(handler.resource.count == 2)
  }

  @Test func aClientLeavingMidBodyAbortsTheConsumerCancelsAndCompletesIncomplete() throws {
    let handler = TestHandler()
    let client = TestClient(.inProcess(handler))
    defer { client.shutdown() }
    let exchange = try client.start("POST", "/echo", framing: .contentLength(1000))
    try exchange.send(TestHandler.pattern(100))
    #expect(handler.recorder.wait(timeout: 5) { $0.contains("consumer /echo") })
    exchange.cancel()
    #expect(handler.recorder.wait(timeout: 5) { $0.contains("consumer cancelled") })
    #expect(handler.recorder.all.contains("aborted 100"))
    let completions = handler.completions.wait(for: 1)
    #expect(completions.count == 1)
    #expect(completions.first?.isComplete == false && completions.first?.bytesIn == 100)
  }

  @Test func oneCompletionPerRequestOnAKeptAliveInProcessConnection() throws {
    let handler = TestHandler()
    let client = TestClient(.inProcess(handler))
    defer { client.shutdown() }
    let connection = try client.connect()
    try connection.send(
      "GET /hello HTTP/1.1\r\nHost: t\r\n\r\nPOST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
    #expect(try connection.readResponse().text == "hello")
    #expect(try connection.readResponse().text == "len=2 sum=209")
    let completions = handler.completions.wait(for: 2)
    #expect(completions.map(\.status) == [200, 200])
    #expect(completions.map(\.route) == ["/hello", "/echo"])
    #expect(completions.allSatisfy { $0.isComplete })
  }
}

/// `TestHandler`, plus `/chunks?<n>[&known]`: `n` pattern bytes streamed in chunks of 30 000
/// from another thread, with the length announced or chunked (`PatternProducer` keeps a
/// counter of its own for `ServerStreamingTests`, which runs alongside).
struct StreamingHandler: HTTPHandler {
  let base = TestHandler()

  /// Hands out its chunks one per demand, from a queue of its own.
  final class Chunks: ResponseBodyProducer {
    let chunks: Mutex<[[UInt8]]>
    init(_ bytes: [UInt8]) {
      chunks = Mutex(
        stride(from: 0, to: bytes.count, by: 30_000).map { Array(bytes[$0..<min(bytes.count, $0 + 30_000)]) })
    }
    func produce(into sink: any ResponseBodySink) {
      DispatchQueue.global().async { [self] in
        if let next = chunks.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
          sink.write(next)
        } else {
          sink.finish()
        }
      }
    }
    func stop() {}
  }

  func head(_ head: HTTPRequestHead, context: inout RequestContext) -> HeadDecision {
    guard head.path == "/chunks", let query = head.query else { return base.head(head, context: &context) }
    let size = Int(query.split(separator: "&")[0]) ?? 0
    let length = query.hasSuffix("&known") ? UInt64(size) : nil
    context.responseHeaders.add(name: "X-Request-Id", value: head.headers.first(name: "X-Request-Id") ?? "-")
    return .offload { _ in
      HTTPResponse(status: 200, body: .stream(length: length, producer: Chunks(TestHandler.pattern(size))))
    }
  }

  func response(for condition: ServerCondition, context: inout RequestContext) -> HTTPResponse {
    base.response(for: condition, context: &context)
  }

  func completed(_ request: CompletedRequest) { base.completed(request) }
}
