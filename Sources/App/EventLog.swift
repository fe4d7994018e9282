/// Application events (start, stop, errors) as JSON lines, normally on standard error.
public final class EventLog: Sendable {
  private let sink: LogSink

  public init(sink: LogSink) { self.sink = sink }

  /// Writes out every queued line (at shutdown).
  public func flush() { sink.flush() }

  /// An informational event.
  public func info(_ message: String, fields: [(String, String)] = []) {
    write(level: "info", message: message, fields: fields)
  }

  /// A failed request: the public `code` and the full (private) error description.
  public func error(_ message: String, requestID: String, code: String, detail: String) {
    write(
      level: "error", message: message,
      fields: [("request_id", requestID), ("code", code), ("detail", detail)])
  }

  /// A warning or start-up problem.
  public func warning(_ message: String, fields: [(String, String)] = []) {
    write(level: "warning", message: message, fields: fields)
  }

  private func write(level: StaticString, message: String, fields: [(String, String)]) {
    guard !sink.isOff else { return }
    var line: [UInt8] = []
    line.append(contentsOf: #"{"time":"#.utf8)
    JSONText.appendQuoted(JSONText.timestamp(), to: &line)
    line.append(contentsOf: #","level":"#.utf8)
    level.withUTF8Buffer { line.append(contentsOf: [0x22] + $0 + [0x22]) }
    line.append(contentsOf: #","message":"#.utf8)
    JSONText.appendQuoted(message, to: &line)
    for (name, value) in fields {
      line.append(UInt8(ascii: ","))
      JSONText.appendQuoted(name, to: &line)
      line.append(UInt8(ascii: ":"))
      JSONText.appendQuoted(value, to: &line)
    }
    line.append(contentsOf: "}\n".utf8)
    sink.write(line)
  }
}
