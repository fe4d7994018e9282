import Dispatch
import Foundation
import HTTP
import Server
import Synchronization

/// Routes for the live tests; records what consumers and work see in `recorder`, and every
/// completion in `completions`.
///
/// - `/hello` answers "hello" without reading anything.
/// - `/echo` reads the body and answers `len=N sum=S`, the trailers as `X-Trailer-*` headers.
/// - `/slow?ms=N` reads the body, sleeps N ms on the worker pool, answers "slow".
/// - `/limited` refuses a `Content-Length` over 1000 with 413 before reading.
/// - `/auth` refuses a request without `Authorization` with 401 before reading, else offloads.
/// - `/gate` is offloaded and holds a worker until `gate` is signalled, then answers "released".
/// - `/interim` sends a 104 then the final answer.
/// - `/file?<offset>,<length>,<path>` answers a file range (sendfile); `/big?<n>` n bytes.
/// - `/cancellable` is offloaded and runs until its cancellation fires (at most 10 s).
/// - `/pause` (`BackpressureConsumer`) pauses at its start or first slice; see there.
/// - `/stream?…` answers a streamed body (`PatternProducer`); see there.
///
/// Request ids: the client's `X-Request-Id`, else `t-<n>`; echoed as a response header.
struct TestHandler: HTTPHandler {
  let recorder: Recorder
  let gate: DispatchSemaphore
  let completions = Completions()

  init(recorder: Recorder = Recorder(), gate: DispatchSemaphore = DispatchSemaphore(value: 0)) {
    self.recorder = recorder
    self.gate = gate
  }

  func head(_ head: HTTPRequestHead, context: inout RequestContext) -> HeadDecision {
    label(&context, sent: head.headers.first(name: "x-request-id"), route: String(head.path))
    recorder.record("head \(head.method) \(head.target) id=\(context.requestID)")
    let query = head.query.map(String.init) ?? ""
    switch head.path {
    case "/hello":
      return .respond(
        HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: .bytes(Array("hello".utf8))))
    case "/limited":
      if case .contentLength(let n) = head.framing, n > 1000 {
        return .respond(HTTPResponse(status: 413, body: .bytes(Array("too big".utf8))))
      }
    case "/file":
      // /file?<offset>,<length>,<path>
      let parts = query.split(separator: ",", maxSplits: 2).map(String.init)
      guard parts.count == 3, let offset = UInt64(parts[0]), let length = UInt64(parts[1]) else { break }
      return .respond(HTTPResponse(status: 200, body: .file(path: parts[2], offset: offset, length: length)))
    case "/big":
      // /big?<bytes>: a pattern body, built per request.
      return .respond(HTTPResponse(status: 200, body: .bytes(Self.pattern(Int(query) ?? 0))))
    case "/auth":
      if !head.headers.contains(name: "authorization") {
        return .respond(HTTPResponse(status: 401, headers: ["WWW-Authenticate": "Bearer"]))
      }
      let recorder = self.recorder
      return .offload { _ in
        recorder.record("work /auth")
        return HTTPResponse(status: 200, body: .bytes(Array("authorized".utf8)))
      }
    case "/gate":
      let gate = self.gate
      return .offload { _ in
        _ = gate.wait(timeout: .now() + 10)
        return HTTPResponse(status: 200, body: .bytes(Array("released".utf8)))
      }
    case "/cancellable":
      return .offload { [recorder] cancellation in Self.runUntilCancelled(cancellation, recorder: recorder) }
    case "/pause":
      return .readBody(BackpressureConsumer(recorder: recorder, query: query))
    case "/stream":
      return PatternProducer.decision(query: query, recorder: recorder)
    default: break
    }
    let path = String(head.path)
    let sleepMS = Int(query.dropFirst(3)) ?? 0
    recorder.record("consumer \(path)")
    return .readBody(
      Consumer(recorder: recorder) { body, trailers, handle in
        switch path {
        case "/slow":
          handle.offload { _ in
            usleep(UInt32(sleepMS * 1000))
            return HTTPResponse(status: 200, body: .bytes(Array("slow".utf8)))
          }
        case "/interim":
          handle.sendInterim(status: 104, headers: ["Upload-Draft-Interop-Version": "6"])
          handle.respond(HTTPResponse(status: 200, body: .bytes(Array("final".utf8))))
        default:
          handle.respond(Self.echo(body, trailers: trailers))
        }
      })
  }

  func response(for condition: ServerCondition, context: inout RequestContext) -> HTTPResponse {
    if context.requestID.isEmpty { label(&context, sent: nil, route: "-") }
    return TestConditions.response(for: condition, requestID: context.requestID)
  }

  func completed(_ request: CompletedRequest) {
    completions.append(request)
  }

  private func label(_ context: inout RequestContext, sent: String?, route: String) {
    let id = sent ?? "t-\(completions.nextID())"
    context.requestID = id
    context.route = route
    context.responseHeaders.add(name: "X-Request-Id", value: id)
  }

  /// `len=N sum=S`, with the trailers as `X-Trailer-*` headers.
  static func echo(_ body: [UInt8], trailers: HTTPHeaders) -> HTTPResponse {
    var headers = HTTPHeaders()
    for field in trailers { headers.add(name: "X-Trailer-\(field.name)", value: field.value) }
    let sum = body.reduce(0) { $0 &+ Int($1) }
    return HTTPResponse(
      status: 200, headers: headers, body: .bytes(Array("len=\(body.count) sum=\(sum)".utf8)))
  }

  /// Spins (bounded) until the request is cancelled; records how it ended.
  static func runUntilCancelled(_ cancellation: RequestCancellation, recorder: Recorder) -> HTTPResponse {
    recorder.record("work started")
    cancellation.onCancel { recorder.record("onCancel") }
    let deadline = Date().addingTimeInterval(10)
    while !cancellation.isCancelled && Date() < deadline { usleep(5_000) }
    recorder.record(cancellation.isCancelled ? "work cancelled" : "work timed out")
    return HTTPResponse(status: 200, body: .bytes(Array("done".utf8)))
  }

  /// `count` bytes of 0, 1, … 250, 0, 1 … (built by doubling: quick even in debug builds).
  static func pattern(_ count: Int) -> [UInt8] {
    var bytes = (0..<251).map { UInt8($0) }
    while bytes.count < count { bytes.append(contentsOf: bytes) }
    return Array(bytes.prefix(count))
  }
}

/// Every completion the handler was told of, in order.
final class Completions: Sendable {
  private let list = Mutex<[CompletedRequest]>([])
  private let ids = Atomic<Int>(0)

  /// A fresh number for a request id.
  func nextID() -> Int { ids.add(1, ordering: .relaxed).newValue }

  func append(_ request: CompletedRequest) { list.withLock { $0.append(request) } }
  var all: [CompletedRequest] { list.withLock { $0 } }

  /// Waits (bounded) until `count` completions arrived; returns them.
  func wait(for count: Int, timeout: Double = 5) -> [CompletedRequest] {
    _ = ServerLiveTests.waitFor(timeout: timeout) { all.count >= count }
    return all
  }
}

/// Collects the body, then hands it to `finish` with the request's handle.
final class Consumer: RequestBodyConsumer {
  let recorder: Recorder
  let finish: ([UInt8], HTTPHeaders, any RequestHandle) -> Void
  var body: [UInt8] = []
  var handle: (any RequestHandle)?

  init(recorder: Recorder, finish: @escaping ([UInt8], HTTPHeaders, any RequestHandle) -> Void) {
    self.recorder = recorder
    self.finish = finish
  }

  func start(_ request: any RequestHandle) -> BodyAction {
    handle = request
    return .proceed
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    body.append(contentsOf: bytes)
    return .proceed
  }

  func end(trailers: HTTPHeaders) {
    recorder.record("end \(body.count)")
    finish(body, trailers, handle!)
  }

  func aborted(bytesReceived: UInt64) {
    recorder.record("aborted \(bytesReceived)")
    if handle?.cancellation.isCancelled == true { recorder.record("consumer cancelled") }
  }
}
