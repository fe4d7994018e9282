import HTTP
import Server
import Storage

/// The answer to a processed upload: the response sent, and the attachment it stored (the
/// first, for a multipart upload), which is known here, never read back out of a header.
public struct UploadAnswer: Sendable {
  /// The attachment the upload became, when one was stored.
  public var attachmentID: String?
  /// The answer as a plain upload gets it (a 201 with the record, or a problem); its body is
  /// `.bytes`.
  public var response: HTTPResponse

  public init(attachmentID: String?, response: HTTPResponse) {
    self.attachmentID = attachmentID
    self.response = response
  }

  /// Client errors are repeated like successes; a 5xx (or a client gone, 499) may succeed on
  /// a retry and is not recorded.
  var isRecordable: Bool { response.status < 500 && response.status != 499 }

  /// What is kept so a repeat answers the same: status, the headers worth repeating and the body.
  var recorded: UploadResult? {
    guard case .bytes(let body) = response.body else { return nil }
    var headers: [String: String] = [:]
    for name in Self.recordedHeaders { headers[name] = response.headers.first(name: name) }
    return UploadResult(
      attachmentID: attachmentID,
      response: StoredResponse(status: response.status, headers: headers, body: body))
  }

  /// The headers a recorded answer keeps.
  static let recordedHeaders = ["Content-Type", "Location"]

  /// A recorded answer, again: its status, headers and body, never cached; an idempotent
  /// retry's says `Idempotent-Replayed: true`. The one replay of both idempotent retries and
  /// repeated completions.
  static func replay(_ stored: StoredResponse, idempotent: Bool) -> HTTPResponse {
    var headers = HTTPHeaders()
    for (name, value) in stored.headers.sorted(by: { $0.key < $1.key }) {
      headers.add(name: name, value: value)
    }
    headers.add(name: "Cache-Control", value: "no-store")
    if idempotent { headers.add(name: "Idempotent-Replayed", value: "true") }
    return HTTPResponse(status: stored.status, headers: headers, body: .bytes(stored.body))
  }
}
