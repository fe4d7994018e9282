import Foundation
import HTTP

/// One response as a test client saw it. Both modes read it from the bytes of a connection
/// (the in-process mode writes the handler's answer with the server's own writer), so the same
/// request gets the same `TestResponse` from either, `Date` aside.
public struct TestResponse: Sendable {
  /// The status code.
  public var status: Int
  /// The header fields in order, names as sent; look-ups ignore case.
  public var headers: HTTPHeaders
  /// The body (empty for 1xx, 204 and 304 answers and answers to HEAD).
  public var body: [UInt8]
  /// The status line and header fields exactly as they came, without the blank line.
  public var head: String
  /// The interim (1xx) responses read before this final one by the same call.
  public var interim: [TestResponse] = []

  public init(status: Int, headers: HTTPHeaders, body: [UInt8] = [], head: String = "") {
    self.status = status
    self.headers = headers
    self.body = body
    self.head = head
  }

  /// The first value of the header field `name` (any case), nil when absent.
  public subscript(_ name: String) -> String? { headers.first(name: name) }

  /// Every field name, lower-cased.
  public var names: Set<String> { Set(headers.map { $0.name.lowercased() }) }

  /// The body as UTF-8 text.
  public var text: String { String(decoding: body, as: UTF8.self) }

  /// The body parsed as a JSON object, if it is one.
  public var json: [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
  }

  /// The body parsed as a JSON array of objects, if it is one.
  public var jsonArray: [[String: Any]]? {
    (try? JSONSerialization.jsonObject(with: Data(body))) as? [[String: Any]]
  }
}

/// A failure of an exchange: connecting, sending, a closed or malformed answer, a timeout.
public struct TestClientError: Error, CustomStringConvertible {
  public var description: String

  public init(_ description: String) { self.description = description }
}
