import HTTP
import Server
import Synchronization

/// One request's `RequestHandle` in the in-process mode, usable from any thread: answers hop
/// to the connection's loop, and work handed to a pool runs on the client's own threads with
/// the request's resources held until it returns.
final class InProcessHandle: RequestHandle, @unchecked Sendable {
  // Reached through `onLoop` only; the class crosses threads, the connection's state does not.
  private let connection: InProcessConnection
  private let sequence: UInt64
  private let scope: RequestScope
  private let answered = Atomic<Bool>(false)
  let cancellation = RequestCancellation()

  init(connection: InProcessConnection, sequence: UInt64, scope: RequestScope) {
    self.connection = connection
    self.sequence = sequence
    self.scope = scope
  }

  func respond(_ response: HTTPResponse) {
    guard claimAnswer() else {
      InProcessConnection.discard(response)
      return
    }
    connection.onLoop { [sequence] in $0.deliver(response, sequence: sequence) }
  }

  func sendInterim(status: Int, headers: HTTPHeaders) {
    guard !answered.load(ordering: .acquiring) else { return }
    connection.onLoop { [sequence] in $0.deliverInterim(status: status, headers: headers, sequence: sequence)
    }
  }

  @discardableResult
  func offload(_ pool: Pool, _ work: @escaping @Sendable (RequestCancellation) -> HTTPResponse) -> Bool {
    let accepted = run(on: pool) { [self] in respond(work(cancellation)) }
    if !accepted && claimAnswer() {
      connection.onLoop { [sequence] in $0.deliverCondition(.overloaded, sequence: sequence) }
    }
    return accepted
  }

  func execute(_ work: @escaping @Sendable () -> Void) {
    _ = run(on: .io, work)
  }

  func resumeReading() {
    connection.onLoop { [sequence] in $0.resumeReading(sequence: sequence) }
  }

  /// True for the first answer of the request only.
  private func claimAnswer() -> Bool { !answered.exchange(true, ordering: .acquiringAndReleasing) }

  /// Runs `work` on `pool`, holding the request's resources until it returns; false when the
  /// pool refused it.
  private func run(on pool: Pool, _ work: @escaping @Sendable () -> Void) -> Bool {
    scope.enter()
    let accepted = connection.pools.submit(pool) { [scope] in
      defer { scope.leave() }
      work()
    }
    if !accepted { scope.leave() }
    return accepted
  }
}

/// Where a streamed body's producer delivers in the in-process mode, from any thread.
final class InProcessBodySink: ResponseBodySink, @unchecked Sendable {
  // Reached through `onLoop` only, as in `InProcessHandle`.
  private let connection: InProcessConnection
  let sequence: UInt64

  init(connection: InProcessConnection, sequence: UInt64) {
    self.connection = connection
    self.sequence = sequence
  }

  func write(_ bytes: [UInt8]) {
    connection.onLoop { [sequence] in $0.streamWrite(bytes, sequence: sequence) }
  }

  func finish() {
    connection.onLoop { [sequence] in $0.streamFinish(sequence: sequence) }
  }

  func fail() {
    connection.onLoop { [sequence] in $0.streamFail(sequence: sequence) }
  }
}
