import Foundation
import Glibc
import Testing

/// Exact bytes to attachd and exact bytes back, over one keep-alive connection on 127.0.0.1:
/// what tus clients send, without a client library deciding anything.
final class TusWire {
  /// One response as it came off the wire.
  struct Response {
    var status: Int
    /// Header fields in order, names as sent.
    var fields: [(name: String, value: String)]
    var body: [UInt8]

    /// The values of header `name` (case-insensitive).
    func values(_ name: String) -> [String] {
      fields.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
    /// The single value of header `name`, nil when absent.
    subscript(_ name: String) -> String? { values(name).first }
    /// The body as a JSON object.
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    /// `code` of a problem body.
    var code: String? { json?["code"] as? String }
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  let port: Int
  private let fd: Int32
  private var buffer: [UInt8] = []

  /// Connects to `port`; every read and write gives up after `timeout` seconds.
  init(port: Int, timeout: Double = 10) throws {
    self.port = port
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
    guard connected else {
      Glibc.close(fd)
      throw Failure(description: "connect to \(port) failed: errno \(errno)")
    }
  }

  deinit { Glibc.close(fd) }

  /// The request head for `method path` with `fields` (Host is added), CRLF-terminated.
  func head(_ method: String, _ path: String, _ fields: [(String, String)]) -> [UInt8] {
    var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
    for (name, value) in fields { text += "\(name): \(value)\r\n" }
    return Array((text + "\r\n").utf8)
  }

  /// Sends a request (with `Content-Length` when `body` is given) and reads its response.
  func request(_ method: String, _ path: String, _ fields: [(String, String)], body: [UInt8]? = nil) throws
    -> Response
  {
    var all = fields
    if let body { all.append(("Content-Length", String(body.count))) }
    try send(head(method, path, all) + (body ?? []))
    return try response(forHead: method == "HEAD")
  }

  /// Writes every byte.
  func send(_ bytes: [UInt8]) throws {
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      guard n > 0 else { throw Failure(description: "send failed: errno \(errno)") }
      sent += n
    }
  }

  /// Reads one final response (interim 1xx ones are skipped).
  func response(forHead: Bool = false) throws -> Response {
    while true {
      let response = try readOne(forHead: forHead)
      if response.status >= 200 { return response }
    }
  }

  /// True when the server closes the connection within the timeout.
  func closed() -> Bool {
    while true {
      guard let more = try? fill() else { return false }
      if !more { return true }
    }
  }

  private func readOne(forHead: Bool) throws -> Response {
    let end = try headEnd()
    let text = String(decoding: buffer[0..<end], as: UTF8.self)
    buffer.removeFirst(end + 4)
    var lines = text.components(separatedBy: "\r\n")
    let status = lines.removeFirst().split(separator: " ")
    guard status.count >= 2, let code = Int(status[1]) else {
      throw Failure(description: "status line: \(text)")
    }
    let fields = lines.map { line -> (name: String, value: String) in
      let parts = line.split(separator: ":", maxSplits: 1)
      return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
    }
    var response = Response(status: code, fields: fields, body: [])
    guard code >= 200, !forHead, code != 204, code != 304 else { return response }
    let length = response["Content-Length"].flatMap { Int($0) } ?? 0
    while buffer.count < length {
      guard try fill() else { throw Failure(description: "closed mid-body") }
    }
    response.body = Array(buffer[0..<length])
    buffer.removeFirst(length)
    return response
  }

  private func headEnd() throws -> Int {
    let separator: [UInt8] = [13, 10, 13, 10]
    var from = 0
    while true {
      if buffer.count >= 4,
        let end = (from...(buffer.count - 4)).first(where: { buffer[$0..<($0 + 4)].elementsEqual(separator) })
      {
        return end
      }
      from = max(0, buffer.count - 3)
      guard try fill() else { throw Failure(description: "closed before a response") }
    }
  }

  private func fill() throws -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n > 0 {
      buffer += chunk[0..<n]
      return true
    }
    if n == 0 || errno == ECONNRESET { return false }
    throw Failure(description: "recv failed: errno \(errno)")
  }
}
