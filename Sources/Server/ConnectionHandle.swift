import HTTP
import Synchronization

/// One request's `RequestHandle`: hops to the connection's loop when called from elsewhere.
final class ConnectionHandle: RequestHandle, @unchecked Sendable {
  // Touched only on `loop`'s thread; the class crosses threads but the connection never does.
  private let connection: Connection
  private let loop: EventLoop
  private let sequence: UInt64
  private let answered = Atomic<Bool>(false)
  /// The request's resources, held while work of it runs.
  private let scope: RequestScope
  let cancellation = RequestCancellation()

  init(connection: Connection, sequence: UInt64, scope: RequestScope) {
    self.connection = connection
    self.loop = connection.loop
    self.sequence = sequence
    self.scope = scope
  }

  func respond(_ response: HTTPResponse) {
    guard !answered.exchange(true, ordering: .acquiringAndReleasing) else {
      Connection.discard(response)
      return
    }
    onLoop { $0.connection.deliver(response, sequence: $0.sequence) }
  }

  func sendInterim(status: Int, headers: HTTPHeaders) {
    guard !answered.load(ordering: .acquiring) else { return }
    onLoop { $0.connection.deliverInterim(status: status, headers: headers, sequence: $0.sequence) }
  }

  @discardableResult
  func offload(_ pool: Pool, _ work: @escaping @Sendable (RequestCancellation) -> HTTPResponse) -> Bool {
    scope.enter()
    let accepted = loop.server.submit(to: pool) { [self] in
      defer { scope.leave() }
      respond(work(cancellation))
    }
    guard !accepted else { return true }
    scope.leave()
    if !answered.exchange(true, ordering: .acquiringAndReleasing) {
      onLoop { $0.connection.deliverCondition(.overloaded, sequence: $0.sequence) }
    }
    return false
  }

  func execute(_ work: @escaping @Sendable () -> Void) {
    scope.enter()
    loop.server.submit(to: .io) { [scope] in
      defer { scope.leave() }
      work()
    }
  }

  func resumeReading() {
    onLoop { $0.connection.resumeReading(sequence: $0.sequence) }
  }

  private func onLoop(_ body: @escaping @Sendable (ConnectionHandle) -> Void) {
    if loop.inLoop {
      body(self)
    } else {
      loop.execute { [self] in body(self) }
    }
  }
}

/// Where a streamed body's producer delivers, from any thread.
final class ConnectionBodySink: ResponseBodySink, @unchecked Sendable {
  // Touched only on `loop`'s thread, as in `ConnectionHandle`.
  private let connection: Connection
  private let loop: EventLoop
  private let sequence: UInt64

  init(connection: Connection, sequence: UInt64) {
    self.connection = connection
    self.loop = connection.loop
    self.sequence = sequence
  }

  func write(_ bytes: [UInt8]) {
    onLoop { $0.connection.streamWrite(bytes, sequence: $0.sequence) }
  }

  func finish() {
    onLoop { $0.connection.streamFinish(sequence: $0.sequence) }
  }

  func fail() {
    onLoop { $0.connection.streamFail(sequence: $0.sequence) }
  }

  /// Resumes writing on a later loop turn (after a long burst from a quick producer).
  func flushLater() {
    loop.execute { [self] in
      guard !connection.isClosed, connection.sequence == sequence else { return }
      connection.flush()
    }
  }

  private func onLoop(_ body: @escaping @Sendable (ConnectionBodySink) -> Void) {
    if loop.inLoop {
      body(self)
    } else {
      loop.execute { [self] in body(self) }
    }
  }
}
