import HTTP
import Server

extension Application {
  /// The server's own answers (parse errors, timeouts, overload, connection cap) from
  /// `ErrorTable`; only the server-side faults are logged, since the others are the client's
  /// doing or plain load and would flood the log exactly when it matters. A request refused
  /// before its head is labelled here; the canned connection-cap answer carries no id.
  public func response(for condition: ServerCondition, context: inout RequestContext) -> HTTPResponse {
    let log: EventLog? =
      switch condition {
      case .invalidResponseStatus, .unreadableFile: eventLog
      case .malformedRequest, .requestTimeout, .overloaded, .tooManyConnections: nil
      }
    // Work the CPU workers refused: the one place an overloaded answer is made.
    if condition == .overloaded { metrics.recordRejection(code: "overloaded") }
    if context.requestID.isEmpty {
      // Asked once at start-up and sent canned to every refused connection: no id fits them all.
      if condition == .tooManyConnections {
        return ErrorTable.response(for: condition, requestID: nil, log: log)
      }
      RequestIDs.label(&context, id: requestIDs.fresh())
      context.route = Self.unmatchedRoute
    }
    return ErrorTable.response(for: condition, requestID: context.requestID, log: log)
  }
}
