import HTTP
import Server

extension Application {
  /// The server's own answers (parse errors, timeouts, overload, connection cap) from
  /// `ErrorTable`; only the server-side faults are logged, since the others are the client's
  /// doing or plain load and would flood the log exactly when it matters.
  public func response(for condition: ServerCondition, requestID: String?) -> HTTPResponse {
    let log: EventLog? =
      switch condition {
      case .invalidResponseStatus, .unreadableFile: eventLog
      case .malformedRequest, .requestTimeout, .overloaded, .tooManyConnections: nil
      }
    return ErrorTable.response(for: condition, requestID: requestID, log: log)
  }
}
