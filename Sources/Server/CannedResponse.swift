import HTTP

/// A response serialised once, head and body, and written many times with only its `Date`
/// refreshed: the answer to connections over `maxConnections`, whose path must stay cheap.
struct CannedResponse: Sendable {
  /// The whole response, `Connection: close`.
  private(set) var bytes: [UInt8]
  /// Where the `Date` value sits in `bytes`.
  private let dateRange: Range<Int>

  /// Serialises `response`; only a `.bytes` body is carried (others are sent empty).
  init(_ response: HTTPResponse, date: [UInt8]) {
    let body: [UInt8]
    if case .bytes(let bytes) = response.body { body = bytes } else { body = [] }
    var out: [UInt8] = []
    HTTPResponseWriter.writeResponse(
      status: response.status, headers: response.headers, body: body, keepAlive: false, date: date,
      into: &out)
    // The writer puts `Date` first, right after the status line.
    var start = 0
    while start + 1 < out.count && !(out[start] == 0x0D && out[start + 1] == 0x0A) { start += 1 }
    start += 2 + "Date: ".utf8.count
    bytes = out
    dateRange = start..<(start + date.count)
  }

  /// Puts `date` in place of the current one (IMF-fixdates all have the same length).
  mutating func setDate(_ date: [UInt8]) {
    guard date.count == dateRange.count else { return }
    bytes.replaceSubrange(dateRange, with: date)
  }
}
