import HTTP
import Server
import Synchronization

/// Request ids: the client's `X-Request-Id` when it is well-formed, else a fresh one. The id
/// is on every response (`X-Request-Id`), in every problem's `instance` and in the logs.
final class RequestIDs: Sendable {
  /// Random per process, so ids from two runs (or two nodes) do not collide.
  private let prefix = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
  private let counter = Atomic<UInt64>(0)

  /// The id for a request with `head` (nil: no head was parsed).
  func id(for head: HTTPRequestHead?) -> String {
    if let sent = head?.headers.first(name: "x-request-id"), Self.isWellFormed(sent) { return sent }
    return fresh()
  }

  /// A new id, `<prefix>-<n>` in hex.
  func fresh() -> String {
    "\(prefix)-\(String(counter.add(1, ordering: .relaxed).newValue, radix: 16))"
  }

  /// 1…128 characters of `[A-Za-z0-9._-]`: anything else could carry markup or split a log line.
  static func isWellFormed(_ id: String) -> Bool {
    let utf8 = id.utf8
    guard (1...128).contains(utf8.count) else { return false }
    return utf8.allSatisfy { c in
      (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E
        || c == 0x5F || c == 0x2D
    }
  }

  /// Labels `context` with `id`: the id itself, and the response header that carries it.
  static func label(_ context: inout RequestContext, id: String) {
    context.requestID = id
    context.responseHeaders.add(name: "X-Request-Id", value: id)
  }
}
