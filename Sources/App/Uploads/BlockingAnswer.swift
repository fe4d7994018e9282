import HTTP
import Server

/// Answers a request whose work blocks (store look-ups, a takeover) on the upload engine's I/O
/// threads instead of the image workers, and keeps the connection: the request's body (none,
/// usually) is read and dropped, then the answer goes out.
final class BlockingAnswer: RequestBodyConsumer, @unchecked Sendable {
  // `answer` is written on an I/O thread before `resumeReading`, read on the loop in `end`:
  // the resume's hop to the loop orders the two.
  private let engine: UploadEngine
  private let work: @Sendable () -> HTTPResponse
  private var handle: (any RequestHandle)?
  private var answer: HTTPResponse?
  private var dropped = 0

  /// The most body bytes dropped before the answer goes out early (and the connection closes).
  static let maxDroppedBytes = 64 << 10

  init(engine: UploadEngine, work: @escaping @Sendable () -> HTTPResponse) {
    self.engine = engine
    self.work = work
  }

  func start(_ request: any RequestHandle) -> BodyAction {
    handle = request
    engine.submit { [self] in
      answer = work()
      request.resumeReading()
    }
    return .pause
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    dropped += bytes.count
    guard dropped > Self.maxDroppedBytes, let answer else { return .proceed }
    return .reject(answer)
  }

  func end(trailers: HTTPHeaders) {
    if let answer { handle?.respond(answer) }
  }

  func aborted(bytesReceived: UInt64) {}
}
