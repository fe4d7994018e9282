/// What a client is told about an error: status, a stable `code`, a short public title and
/// any header the status calls for (`Allow`, `Retry-After`). The App's error table makes these;
/// an upload protocol may dress one in its own problem type and fields before it is sent.
public struct PublicError: Sendable, Equatable {
  public var status: Int
  public var code: String
  public var title: String
  public var headers: HTTPHeaders
  /// The problem type URI when a specification defines one (`about:blank` otherwise).
  public var type: String
  /// Integer members the problem type defines (e.g. `expected-offset`).
  public var integers: [ProblemDetails.IntegerMember]

  public init(
    status: Int, code: String, title: String, headers: HTTPHeaders = [:], type: String = "about:blank",
    integers: [ProblemDetails.IntegerMember] = []
  ) {
    self.status = status
    self.code = code
    self.title = title
    self.headers = headers
    self.type = type
    self.integers = integers
  }
}
