import HTTP

/// A condition the server meets before or outside a handler and must answer on its own. The
/// handler's `response(for:requestID:)` turns it into a response: the server decides no
/// status or code itself.
public enum ServerCondition: Error, Sendable, Equatable {
  /// The parser refused the request (or its head outgrew the read buffer); the connection
  /// closes after the answer.
  case malformedRequest(HTTPParserError)
  /// The client was too slow sending its head or body.
  case requestTimeout
  /// `Responder.offload` found the worker pool and its queue full.
  case overloaded
  /// A connection accepted over `maxConnections`; asked once at start-up, then sent canned.
  case tooManyConnections
  /// The handler answered with a status that is not final (below 200).
  case invalidResponseStatus(Int)
  /// The file of a `.file` response body could not be opened.
  case unreadableFile(path: String, errno: Int32)
}
