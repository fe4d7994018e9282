import AttachdTesting
import Dispatch
import Foundation
import HTTP
import Server
import Synchronization
import Testing

/// `RequestContext.hold`, the two pools and `RequestHandle.execute` on real sockets: a
/// request's resources go back exactly once, when its answer is queued (or its client left)
/// and none of its work is still running.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct RequestResourceTests {

  /// Counts its releases; records when they happen relative to the request's work.
  final class Resource: RequestResource {
    let releases = Atomic<Int>(0)
    let workRunning = Atomic<Bool>(false)
    let releasedWhileWorkRan = Atomic<Bool>(false)
    func release() {
      if workRunning.load(ordering: .acquiring) { releasedWhileWorkRan.store(true, ordering: .releasing) }
      releases.add(1, ordering: .acquiringAndReleasing)
    }
    var count: Int { releases.load(ordering: .acquiring) }
    var overlapped: Bool { releasedWhileWorkRan.load(ordering: .acquiring) }
  }

  /// What ran, in order.
  final class Log: Sendable {
    private let entries = Mutex<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
  }

  /// `/cpu` offloads to the CPU workers, `/io` to the I/O threads, `/execute` reads the body
  /// and runs blocking work with `execute` before answering from it, `/gate` holds a CPU worker
  /// until `gate` is signalled; each holds `resource`. `/hello` holds it and answers at once.
  struct Handler: HTTPHandler {
    let resource: Resource
    let gate = DispatchSemaphore(value: 0)
    let ran = Log()

    func head(_ head: HTTPRequestHead, context: inout RequestContext) -> HeadDecision {
      context.hold(resource)
      let path = String(head.path)
      switch path {
      case "/hello":
        return .respond(HTTPResponse(status: 200))
      case "/cpu", "/io":
        return .offload(path == "/io" ? .io : .cpu) { [self] _ in
          resource.workRunning.store(true, ordering: .releasing)
          defer { resource.workRunning.store(false, ordering: .releasing) }
          ran.append(path)
          usleep(50_000)
          return HTTPResponse(status: 200, body: .bytes(Array(path.utf8)))
        }
      case "/gate":
        return .offload { [self] _ in
          _ = gate.wait(timeout: .now() + 10)
          ran.append("/gate")
          return HTTPResponse(status: 200)
        }
      default:
        return .readBody(ExecutingConsumer(handler: self))
      }
    }

    func response(for condition: ServerCondition, context: inout RequestContext) -> HTTPResponse {
      HTTPResponse(status: condition == .overloaded ? 503 : 400)
    }

    func completed(_ request: CompletedRequest) {}
  }

  /// Answers from blocking work it hands to `execute`, then keeps the request busy on the I/O
  /// threads a little longer after the answer is sent.
  final class ExecutingConsumer: RequestBodyConsumer, @unchecked Sendable {
    let handler: Handler
    var handle: (any RequestHandle)?
    init(handler: Handler) { self.handler = handler }
    func start(_ request: any RequestHandle) -> BodyAction {
      handle = request
      return .proceed
    }
    func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction { .proceed }
    func end(trailers: HTTPHeaders) {
      guard let handle else { return }
      let resource = handler.resource
      handle.execute {
        resource.workRunning.store(true, ordering: .releasing)
        handle.respond(HTTPResponse(status: 200, body: .bytes(Array("executed".utf8))))
        usleep(100_000)
        resource.workRunning.store(false, ordering: .releasing)
      }
    }
    func aborted(bytesReceived: UInt64) {}
  }

  /// Holds the server's one CPU worker with `/gate` until the handler's gate opens.
  static func occupyTheWorker(_ live: LiveServer) throws -> TestConnection {
    let busy = try TestConnection.live(port: live.port, timeout: 5)
    try busy.send("GET /gate HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(ServerLiveTests.waitFor(timeout: 2) { live.server.pool.inFlight == 1 })
    return busy
  }

  @Test func aResourceHeldByARequestAnsweredAtOnceIsReleasedOnce() throws {
    let handler = Handler(resource: Resource())
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().status == 200)
    #expect(ServerLiveTests.waitFor(timeout: 2) { handler.resource.count == 1 })
    usleep(50_000)
    #expect(handler.resource.count == 1)
  }

  @Test(arguments: ["/cpu", "/io"])
  func offloadedWorkKeepsTheResourceUntilItReturns(path: String) throws {
    let handler = Handler(resource: Resource())
    let live = try LiveServer({ $0.ioThreads = 1 }, handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
    let response = try client.readResponse()
    #expect(response.status == 200 && response.text == path)
    #expect(ServerLiveTests.waitFor(timeout: 2) { handler.resource.count == 1 })
    #expect(!handler.resource.overlapped)
    #expect(handler.ran.all == [path])
  }

  @Test func workForTheIOThreadsRunsWhileEveryCPUWorkerIsBusy() throws {
    let handler = Handler(resource: Resource())
    let live = try LiveServer({ $0.workerThreads = 1 }, handler: handler)
    defer {
      handler.gate.signal()
      live.stop()
    }
    let busy = try Self.occupyTheWorker(live)
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("GET /io HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try client.readResponse().text == "/io")
    #expect(live.server.pool.inFlight == 1)
    withExtendedLifetime(busy) {}
  }

  @Test func anAnswerReleasesTheResourceWhileTheWorkThatSentItStillRuns() throws {
    let handler = Handler(resource: Resource())
    let live = try LiveServer(handler: handler)
    defer { live.stop() }
    let client = try TestConnection.live(port: live.port, timeout: 5)
    try client.send("POST /execute HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc")
    let response = try client.readResponse()
    #expect(response.status == 200 && response.text == "executed")
    // The answer is out while the work still runs: the resource went back before it was sent,
    // so a client's next request finds it free.
    #expect(handler.resource.count == 1)
    #expect(handler.resource.overlapped)
    usleep(200_000)
    #expect(handler.resource.count == 1)
  }

  @Test func aRequestRefusedByAFullPoolReleasesItsResource() throws {
    let handler = Handler(resource: Resource())
    let live = try LiveServer(
      {
        $0.workerThreads = 1
        $0.workerQueueLength = 0
      }, handler: handler)
    defer {
      handler.gate.signal()
      live.stop()
    }
    let busy = try Self.occupyTheWorker(live)
    let refused = try TestConnection.live(port: live.port, timeout: 5)
    try refused.send("GET /cpu HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(try refused.readResponse().status == 503)
    #expect(ServerLiveTests.waitFor(timeout: 2) { handler.resource.count == 1 })
    handler.gate.signal()
    #expect(try busy.readResponse().status == 200)
    #expect(ServerLiveTests.waitFor(timeout: 2) { handler.resource.count == 2 })
  }

  @Test func workQueuedForAClientThatLeftStillHoldsTheResourceUntilItReturns() throws {
    let handler = Handler(resource: Resource())
    let live = try LiveServer({ $0.workerThreads = 1 }, handler: handler)
    defer { live.stop() }
    let busy = try Self.occupyTheWorker(live)
    var gone: TestConnection? = try TestConnection.live(port: live.port, timeout: 5)
    try gone?.send("GET /cpu HTTP/1.1\r\nHost: t\r\n\r\n")
    #expect(ServerLiveTests.waitFor(timeout: 2) { live.server.pool.inFlight == 2 })
    gone?.close(reset: true)
    gone = nil
    usleep(100_000)
    handler.gate.signal()
    #expect(try busy.readResponse().status == 200)
    #expect(
      ServerLiveTests.waitFor(timeout: 2) { handler.resource.count == 2 && live.server.pool.inFlight == 0 })
    #expect(handler.ran.all.count == 2)
  }
}
