import Dispatch
import Foundation
import HTTP
import Server

/// Routes for the live tests; records what consumers see in `recorder`.
///
/// - `/hello` answers "hello" without reading anything.
/// - `/echo` reads the body and answers `len=N sum=S`, the trailers as `X-Trailer-*` headers.
/// - `/slow?ms=N` reads the body, sleeps N ms on the worker pool, answers "slow".
/// - `/limited` refuses a `Content-Length` over 1000 with 413 before reading.
/// - `/auth` refuses a request without `Authorization` with 401 before reading.
/// - `/gate` holds a worker until `gate` is signalled, then answers "released".
/// - `/interim` sends a 104 then the final answer.
/// - `/file?<offset>,<length>,<path>` answers a file range (sendfile); `/big?<n>` n bytes.
struct TestHandler: HTTPHandler {
  let recorder: Recorder
  let gate: DispatchSemaphore

  init(recorder: Recorder = Recorder(), gate: DispatchSemaphore = DispatchSemaphore(value: 0)) {
    self.recorder = recorder
    self.gate = gate
  }

  func head(_ head: HTTPRequestHead, context: RequestContext) -> HeadDecision {
    recorder.record("head \(head.method) \(head.target) id=\(context.requestID)")
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
      let parts = (head.query ?? "").split(separator: ",", maxSplits: 2).map(String.init)
      guard parts.count == 3, let offset = UInt64(parts[0]), let length = UInt64(parts[1]) else { break }
      return .respond(HTTPResponse(status: 200, body: .file(path: parts[2], offset: offset, length: length)))
    case "/big":
      // /big?<bytes>: a pattern body, built per request.
      let count = head.query.flatMap { Int($0) } ?? 0
      return .respond(HTTPResponse(status: 200, body: .bytes(Self.pattern(count))))
    case "/auth":
      if !head.headers.contains(name: "authorization") {
        return .respond(HTTPResponse(status: 401, headers: ["WWW-Authenticate": "Bearer"]))
      }
    default: break
    }
    let gate = self.gate
    let path = String(head.path)
    let sleepMS = head.query.flatMap { Int($0.dropFirst(3)) } ?? 0
    recorder.record("consumer \(path)")
    return .readBody(
      Consumer(recorder: recorder) { body, trailers, responder in
        switch path {
        case "/slow":
          responder.offload {
            usleep(UInt32(sleepMS * 1000))
            return HTTPResponse(status: 200, body: .bytes(Array("slow".utf8)))
          }
        case "/gate":
          responder.offload {
            _ = gate.wait(timeout: .now() + 10)
            return HTTPResponse(status: 200, body: .bytes(Array("released".utf8)))
          }
        case "/interim":
          responder.sendInterim(status: 104, headers: ["Upload-Draft-Interop-Version": "6"])
          responder.respond(HTTPResponse(status: 200, body: .bytes(Array("final".utf8))))
        default:
          var headers = HTTPHeaders()
          for field in trailers { headers.add(name: "X-Trailer-\(field.name)", value: field.value) }
          let sum = body.reduce(0) { $0 &+ Int($1) }
          responder.respond(
            HTTPResponse(
              status: 200, headers: headers, body: .bytes(Array("len=\(body.count) sum=\(sum)".utf8))))
        }
      })
  }
}

extension TestHandler {
  /// `count` bytes of 0, 1, … 250, 0, 1 … (built by doubling: quick even in debug builds).
  static func pattern(_ count: Int) -> [UInt8] {
    var bytes = (0..<251).map { UInt8($0) }
    while bytes.count < count { bytes.append(contentsOf: bytes) }
    return Array(bytes.prefix(count))
  }
}

/// Collects the body, then hands it to `finish`.
final class Consumer: RequestBodyConsumer {
  let recorder: Recorder
  let finish: ([UInt8], HTTPHeaders, Responder) -> Void
  var body: [UInt8] = []

  init(recorder: Recorder, finish: @escaping ([UInt8], HTTPHeaders, Responder) -> Void) {
    self.recorder = recorder
    self.finish = finish
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    body.append(contentsOf: bytes)
    return .proceed
  }

  func end(trailers: HTTPHeaders, responder: Responder) {
    recorder.record("end \(body.count)")
    finish(body, trailers, responder)
  }

  func aborted(bytesReceived: UInt64) {
    recorder.record("aborted \(bytesReceived)")
  }
}
