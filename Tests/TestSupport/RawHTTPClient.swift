import Foundation
import Glibc

/// A byte-exact HTTP/1.1 client on a blocking socket to 127.0.0.1: the test writes the request
/// bytes itself (any header spelling, a body cut anywhere) and reads every response, interim
/// (1xx) ones included. Every read is bounded by the socket timeout.
///
/// `@unchecked Sendable`: one thread may read responses while another sends (a client reading
/// progress `104`s mid-body); the read buffer is touched by the reading thread only.
public final class RawHTTPClient: @unchecked Sendable {
  /// One response as it came over the wire.
  public struct Response: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields in order, names as sent.
    public var headers: [(name: String, value: String)]
    /// The body (empty for 1xx, 204, 304 and HEAD answers).
    public var body: [UInt8]

    /// The first value of `name` (case-insensitive).
    public func header(_ name: String) -> String? {
      headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every field name, lower-cased.
    public var names: Set<String> { Set(headers.map { $0.name.lowercased() }) }

    /// The body as text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, if it is one.
    public var json: [String: Any]? {
      (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
  }

  /// A failure of the exchange (connect, send, a closed or malformed answer, a timeout).
  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  private let fd: Int32
  private var buffer: [UInt8] = []
  private var isClosed = false

  /// Connects to 127.0.0.1:`port`; reads and writes time out after `timeout` seconds.
  public init(port: Int, timeout: Double = 10) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
    var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    if result != 0 {
      let code = errno
      Glibc.close(fd)
      throw Failure(description: "connect to \(port) failed: errno \(code)")
    }
  }

  deinit { close() }

  /// Closes the connection (FIN), or resets it (RST) with `reset`.
  public func close(reset: Bool = false) {
    guard !isClosed else { return }
    isClosed = true
    if reset {
      var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }
    Glibc.close(fd)
  }

  /// Sends text as it is.
  public func send(_ text: String) throws { try send(Array(text.utf8)) }

  /// Sends bytes as they are.
  public func send(_ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { try send($0) }
  }

  /// Sends bytes as they are.
  public func send(_ bytes: UnsafeRawBufferPointer) throws {
    var sent = 0
    while sent < bytes.count {
      let n = Glibc.send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { throw Failure(description: "send failed: errno \(errno)") }
      sent += n
    }
  }

  /// A request head: the request line, the fields (`Name: value` each) and the blank line.
  public static func head(_ requestLine: String, _ fields: [String]) -> String {
    ([requestLine] + fields).joined(separator: "\r\n") + "\r\n\r\n"
  }

  /// Reads the next response (an interim 1xx one counts as one). `forHead`: no body follows.
  public func readResponse(forHead: Bool = false) throws -> Response {
    let end = try readUntilBlankLine()
    let text = String(decoding: buffer[0..<end], as: UTF8.self)
    buffer.removeFirst(end + 4)
    var lines = text.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
      throw Failure(description: "bad status line in \(text)")
    }
    let headers = lines.map { line -> (name: String, value: String) in
      let parts = line.split(separator: ":", maxSplits: 1)
      return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
    }
    var response = Response(status: status, headers: headers, body: [])
    if status < 200 || forHead || status == 204 || status == 304 { return response }
    if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
      response.body = try readChunked()
    } else if let length = response.header("Content-Length").flatMap({ Int($0) }) {
      try fill(to: length)
      response.body = Array(buffer[0..<length])
      buffer.removeFirst(length)
    } else {
      while try fill() {}
      response.body = buffer
      buffer = []
    }
    return response
  }

  /// Reads responses until a final one; returns the interim ones and the final one.
  public func readFinal(forHead: Bool = false) throws -> (interim: [Response], final: Response) {
    var interim: [Response] = []
    while true {
      let response = try readResponse(forHead: forHead)
      if response.status >= 200 { return (interim, response) }
      interim.append(response)
    }
  }

  /// True when the server closed the connection (EOF or reset) within the read timeout.
  public func isClosedByPeer() -> Bool {
    while true {
      guard let more = try? fill() else { return false }
      if !more { return true }
      buffer = []
    }
  }

  // MARK: - Internals

  private func readUntilBlankLine() throws -> Int {
    var searched = 0
    while true {
      if buffer.count >= 4 {
        for index in max(0, searched - 3)...(buffer.count - 4)
        where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13
          && buffer[index + 3] == 10
        {
          return index
        }
        searched = buffer.count
      }
      guard try fill() else { throw Failure(description: "closed before a response head") }
    }
  }

  /// Reads more; false on EOF or reset.
  @discardableResult
  private func fill() throws -> Bool {
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n > 0 {
        buffer.append(contentsOf: chunk[0..<n])
        return true
      }
      if n < 0 && errno == EINTR { continue }
      if n == 0 || errno == ECONNRESET { return false }
      throw Failure(description: "recv failed: errno \(errno) (timeout?)")
    }
  }

  private func fill(to count: Int) throws {
    while buffer.count < count {
      guard try fill() else { throw Failure(description: "closed mid-body") }
    }
  }

  private func readChunked() throws -> [UInt8] {
    var body: [UInt8] = []
    while true {
      let line = try readLine()
      guard let size = Int(line.split(separator: ";").first ?? "", radix: 16) else {
        throw Failure(description: "bad chunk size \(line)")
      }
      if size == 0 {
        while try !readLine().isEmpty {}
        return body
      }
      try fill(to: size + 2)
      body += buffer[0..<size]
      buffer.removeFirst(size + 2)
    }
  }

  private func readLine() throws -> String {
    while true {
      if let index = buffer.indices.dropLast().first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 }) {
        let line = String(decoding: buffer[0..<index], as: UTF8.self)
        buffer.removeFirst(index + 2)
        return line
      }
      guard try fill() else { throw Failure(description: "closed mid-chunk") }
    }
  }
}
