import Foundation
import TestSupport

/// Exact tus requests over one keep-alive connection (`RawHTTPClient`): what tus clients send,
/// without a client library deciding anything.
final class TusWire {
  /// One final response, with header look-up by name and the problem `code`.
  struct Response {
    var raw: RawHTTPClient.Response

    var status: Int { raw.status }
    var body: [UInt8] { raw.body }
    /// The single (first) value of header `name`, nil when absent.
    subscript(_ name: String) -> String? { raw.header(name) }
    /// The body as a JSON object.
    var json: [String: Any]? { raw.json }
    /// `code` of a problem body.
    var code: String? { json?["code"] as? String }
  }

  let port: Int
  private let client: RawHTTPClient

  /// Connects to 127.0.0.1:`port`.
  init(port: Int, timeout: Double = 10) throws {
    self.port = port
    client = try RawHTTPClient(port: port, timeout: timeout)
  }

  /// The request head for `method path` with `fields` (Host is added).
  func head(_ method: String, _ path: String, _ fields: [(String, String)]) -> [UInt8] {
    let lines = ["Host: 127.0.0.1:\(port)"] + fields.map { "\($0.0): \($0.1)" }
    return Array(RawHTTPClient.head("\(method) \(path) HTTP/1.1", lines).utf8)
  }

  /// Sends a request (with `Content-Length` when `body` is given) and reads its final response.
  func request(_ method: String, _ path: String, _ fields: [(String, String)], body: [UInt8]? = nil) throws
    -> Response
  {
    var all = fields
    if let body { all.append(("Content-Length", String(body.count))) }
    try send(head(method, path, all) + (body ?? []))
    return try response(forHead: method == "HEAD")
  }

  /// Writes bytes as they are.
  func send(_ bytes: [UInt8]) throws { try client.send(bytes) }

  /// Reads the next final response (interim 1xx ones are skipped).
  func response(forHead: Bool = false) throws -> Response {
    Response(raw: try client.readFinal(forHead: forHead).final)
  }
}
