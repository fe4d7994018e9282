import Foundation

/// The server-to-client direction of an in-process connection: what the loop writes waits
/// here until the test reads it, with a timeout, like bytes in a socket buffer.
final class InProcessPipe: @unchecked Sendable {
  // Every field is touched under `condition`'s lock.
  private let condition = NSCondition()
  private var bytes: [UInt8] = []
  private var closed = false

  func write(_ more: [UInt8]) {
    condition.lock()
    defer { condition.unlock() }
    guard !closed, !more.isEmpty else { return }
    bytes += more
    condition.broadcast()
  }

  /// No more bytes will come (the server closed its side).
  func close() {
    condition.lock()
    defer { condition.unlock() }
    closed = true
    condition.broadcast()
  }

  /// The bytes written so far, waiting up to `timeout` seconds for some; nil once closed and
  /// drained.
  func read(timeout: Double) throws(TestClientError) -> [UInt8]? {
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while bytes.isEmpty && !closed {
      guard condition.wait(until: deadline) else {
        throw TestClientError("nothing to read after \(timeout) s")
      }
    }
    if bytes.isEmpty { return nil }
    defer { bytes = [] }
    return bytes
  }
}
