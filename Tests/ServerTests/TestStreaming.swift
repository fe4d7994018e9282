import Dispatch
import Foundation
import HTTP
import Server
import Synchronization

/// `/pause?at=start|first&resume=<ms>|gate&interim=1`: a body consumer that pauses reading
/// at its start or after its first slice, and resumes from another thread after `<ms>` or
/// once the handler's `gate` is signalled. `interim=1` sends a 104 from `start`, before any body
/// byte. Answers like `/echo`; records "paused …", "resumed", "end N", "aborted N".
final class BackpressureConsumer: RequestBodyConsumer {
  private let recorder: Recorder
  private let pauseAtStart: Bool
  private let resumeAfter: Int?
  private let sendsInterim: Bool
  private var handle: (any RequestHandle)?
  private var body: [UInt8] = []
  private var paused = false
  /// What `resume=gate` waits for (the test's handler gate).
  static let gate = DispatchSemaphore(value: 0)

  init(recorder: Recorder, query: String) {
    let fields = Dictionary(
      query.split(separator: "&").map { pair -> (String, String) in
        let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
        return (parts[0], parts.count > 1 ? parts[1] : "")
      }, uniquingKeysWith: { $1 })
    self.recorder = recorder
    pauseAtStart = fields["at"] == "start"
    resumeAfter = fields["resume"].flatMap { Int($0) }
    sendsInterim = fields["interim"] == "1"
  }

  func start(_ request: any RequestHandle) -> BodyAction {
    handle = request
    if sendsInterim { request.sendInterim(status: 104, headers: ["Location": "/uploads/1"]) }
    guard pauseAtStart else { return .proceed }
    return pause("paused at start")
  }

  func body(_ bytes: UnsafeRawBufferPointer) -> BodyAction {
    body.append(contentsOf: bytes)
    guard !paused else { return .proceed }
    return pause("paused after \(body.count)")
  }

  func end(trailers: HTTPHeaders) {
    recorder.record("end \(body.count)")
    handle?.respond(TestHandler.echo(body, trailers: trailers))
  }

  func aborted(bytesReceived: UInt64) {
    recorder.record("aborted \(bytesReceived)")
    if handle?.cancellation.isCancelled == true { recorder.record("consumer cancelled") }
  }

  /// Pauses once and resumes from another thread.
  private func pause(_ event: String) -> BodyAction {
    paused = true
    recorder.record(event)
    guard let handle else { return .proceed }
    let recorder = self.recorder
    let delay = resumeAfter
    Thread.detachNewThread {
      if let delay {
        usleep(UInt32(delay * 1000))
      } else {
        _ = Self.gate.wait(timeout: .now() + 10)
      }
      recorder.record("resumed")
      handle.resumeReading()
    }
    return .pause
  }
}

/// `/stream?size=N&chunk=C&delay=ms&known=1&fail=K&declared=D`: offloaded work answering a
/// streamed body of `size` pattern bytes, produced on its own thread in chunks of `chunk`
/// bytes, each after `delay` ms. `known=1` announces the length (`declared` instead, to lie);
/// `fail=K` fails once K bytes went out.
/// Counts what it produced; records "producer stopped" when told to stop and "producer done".
final class PatternProducer: ResponseBodyProducer {
  /// Bytes produced by the latest producer (for the backpressure tests).
  static let produced = Atomic<Int>(0)

  private let size: Int
  private let chunk: Int
  private let delay: Int
  private let failAt: Int?
  private let recorder: Recorder
  private let queue = DispatchQueue(label: "pattern-producer")
  private let offset = Mutex(0)
  private let stopped = Atomic<Bool>(false)
  private let pattern: [UInt8]

  init(size: Int, chunk: Int, delay: Int, failAt: Int?, recorder: Recorder) {
    self.size = size
    self.chunk = max(1, chunk)
    self.delay = delay
    self.failAt = failAt
    self.recorder = recorder
    self.pattern = TestHandler.pattern(size)
    Self.produced.store(0, ordering: .relaxed)
  }

  static func decision(query: String, recorder: Recorder) -> HeadDecision {
    var fields: [String: Int] = [:]
    for pair in query.split(separator: "&") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
    }
    let size = fields["size"] ?? 0
    let producer = PatternProducer(
      size: size, chunk: fields["chunk"] ?? 65536, delay: fields["delay"] ?? 0, failAt: fields["fail"],
      recorder: recorder)
    let length = fields["declared"].map { UInt64($0) } ?? (fields["known"] == 1 ? UInt64(size) : nil)
    return .offload { _ in
      HTTPResponse(
        status: 200, headers: ["Content-Type": "application/octet-stream"],
        body: .stream(length: length, producer: producer))
    }
  }

  func produce(into sink: any ResponseBodySink) {
    queue.async { [self] in
      if delay > 0 { usleep(UInt32(delay * 1000)) }
      guard !stopped.load(ordering: .acquiring) else { return }
      let start = offset.withLock { $0 }
      if let failAt, start >= failAt {
        recorder.record("producer failed")
        sink.fail()
        return
      }
      guard start < size else {
        recorder.record("producer done")
        sink.finish()
        return
      }
      let end = min(size, start + chunk)
      offset.withLock { $0 = end }
      Self.produced.add(end - start, ordering: .relaxed)
      sink.write(Array(pattern[start..<end]))
    }
  }

  func stop() {
    stopped.store(true, ordering: .releasing)
    recorder.record("producer stopped")
  }
}

/// A flag another thread polls.
final class Flag: Sendable {
  private let value = Atomic<Bool>(true)
  var isSet: Bool { value.load(ordering: .relaxed) }
  func clear() { value.store(false, ordering: .relaxed) }
}
