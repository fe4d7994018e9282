import HTTP
import Server

/// Answers a bodiless request from the worker pool instead of the event loop.
///
/// `HTTPHandler.head` must never block, so work that touches the disk (the readiness probe;
/// later, index look-ups) goes through here. When the pool and its queue are full, the
/// server answers 503 `overloaded` with `Retry-After` instead.
final class DeferredResponse: RequestBodyConsumer {
  private let work: @Sendable () -> HTTPResponse

  init(_ work: @escaping @Sendable () -> HTTPResponse) {
    self.work = work
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction { .proceed }

  func end(trailers: HTTPHeaders, responder: any Responder) {
    responder.offload(work)
  }

  func aborted(bytesReceived: UInt64) {}
}
