import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// What went wrong with a request, as the server said it (its problem+json `code`) or as the
/// connection ended.
public struct AttachdError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The HTTP status; 0 when no answer arrived.
  public let status: Int
  /// The server's stable problem `code` (`token_expired`, `unsupported_format`, …), or
  /// `connection_lost` / `invalid_response` from the client itself.
  public let code: String
  public let title: String?
  public let detail: String?
  /// Seconds the server asked to wait (`Retry-After`), when it said.
  public let retryAfter: Double?

  public init(
    status: Int, code: String, title: String? = nil, detail: String? = nil, retryAfter: Double? = nil
  ) {
    self.status = status
    self.code = code
    self.title = title
    self.detail = detail
    self.retryAfter = retryAfter
  }

  public var description: String {
    "attachd \(status) \(code)" + (title.map { ": \($0)" } ?? "")
  }

  /// Worth another try of the same request: the server said wait, or it was busy, or the request
  /// never reached it whole (`408`: on Linux, FoundationNetworking's libcurl resends a request
  /// whose reused connection died at once, head only, and the server times the body out).
  var isRetryable: Bool { status == 408 || status == 429 || status == 503 || status == 0 }

  /// The error of a non-2xx answer: its problem body when it has one.
  static func from(status: Int, body: Data, headers: HTTPURLResponse) -> AttachdError {
    let problem = (try? JSONDecoder().decode(ProblemBody.self, from: body)) ?? ProblemBody()
    let retryAfter = headers.value(forHTTPHeaderField: "Retry-After").flatMap(Double.init)
    return problem.error(status: status, retryAfter: retryAfter)
  }

  static func connectionLost(_ error: any Error) -> AttachdError {
    AttachdError(status: 0, code: "connection_lost", detail: String(describing: error))
  }
}

/// An RFC 9457 problem as attachd writes it (with its stable `code`).
struct ProblemBody: Decodable {
  var status: Int?
  var code: String?
  var title: String?
  var detail: String?

  /// The error it describes; `status` is the answer's own when the problem is the whole answer.
  func error(status answerStatus: Int?, retryAfter: Double?) -> AttachdError {
    let status = answerStatus ?? self.status ?? 0
    return AttachdError(
      status: status, code: code ?? "http_\(status)", title: title, detail: detail, retryAfter: retryAfter)
  }
}
