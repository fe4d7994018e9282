import Server

/// One finished request, as the access log records it.
public struct AccessLogRecord: Sendable, Equatable {
  public var requestID: String
  public var method: String
  /// The request target; the log keeps only its path (the query can hold tokens and names).
  public var target: String
  public var status: Int
  public var bytesIn: UInt64
  public var bytesOut: UInt64
  public var durationMilliseconds: Double
  /// Peer as "ip:port".
  public var remoteAddress: String

  public init(
    requestID: String, method: String, target: String, status: Int, bytesIn: UInt64, bytesOut: UInt64,
    durationMilliseconds: Double, remoteAddress: String
  ) {
    self.requestID = requestID
    self.method = method
    self.target = target
    self.status = status
    self.bytesIn = bytesIn
    self.bytesOut = bytesOut
    self.durationMilliseconds = durationMilliseconds
    self.remoteAddress = remoteAddress
  }
}

/// The JSON-lines access log: one object per request with time, request id, method, path
/// (no query, no fragment), status, bytes in/out, duration in ms and remote address.
///
/// Never file names, headers, queries or body bytes: those can carry personal data.
public final class AccessLog: Sendable {
  /// Paths longer than this are cut, so that a hostile client cannot bloat the log.
  public static let maximumPathLength = 512

  private let sink: LogSink

  public init(sink: LogSink) { self.sink = sink }

  /// Writes out every queued line (at shutdown).
  public func flush() { sink.flush() }

  /// Writes one line for a request the server finished; one whose answer was not written
  /// whole is logged with status 0.
  public func record(_ request: CompletedRequest, requestID: String) {
    guard !sink.isOff else { return }
    let (seconds, attoseconds) = request.duration.components
    record(
      AccessLogRecord(
        requestID: requestID, method: request.method, target: request.target,
        status: request.isComplete ? request.status : 0, bytesIn: request.bytesIn, bytesOut: request.bytesOut,
        durationMilliseconds: Double(seconds) * 1000 + Double(attoseconds) / 1e15,
        remoteAddress: request.remoteAddress))
  }

  /// Writes one line for `entry`.
  public func record(_ entry: AccessLogRecord) {
    guard !sink.isOff else { return }
    sink.write(Self.line(for: entry, time: nil))
  }

  /// The log line for `entry` at `time` (nil: now), ending with a newline.
  public static func line(for entry: AccessLogRecord, time: String?) -> [UInt8] {
    var json = JSONText(capacity: 256)
    if let time { json.field("time", time) } else { json.timeField("time") }
    json.field("request_id", entry.requestID)
    json.field("method", entry.method)
    json.field("path", loggedPath(entry.target))
    json.field("status", entry.status)
    json.field("bytes_in", entry.bytesIn)
    json.field("bytes_out", entry.bytesOut)
    json.field("duration_ms", milliseconds: entry.durationMilliseconds)
    json.field("remote", entry.remoteAddress)
    return json.finish(newline: true)
  }

  /// The target without query or fragment, cut to `maximumPathLength` bytes.
  static func loggedPath(_ target: String) -> Substring {
    let end = target.firstIndex(where: { $0 == "?" || $0 == "#" }) ?? target.endIndex
    let path = target[..<end]
    guard path.utf8.count > maximumPathLength else { return path }
    // Cut on a character boundary at or below the limit.
    var cut = path.utf8.index(path.startIndex, offsetBy: maximumPathLength)
    while !path.unicodeScalars.indices.contains(cut) && cut > path.startIndex {
      cut = path.utf8.index(before: cut)
    }
    return path[..<cut]
  }
}
