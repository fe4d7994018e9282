import Foundation
import Glibc

/// A minimal blocking HTTP/1.0 client for probing test servers on 127.0.0.1 (is it up, what does
/// this page say) with no library beneath it.
public enum LoopbackHTTP {
  /// One answer: its status code and body as text.
  public struct Answer: Sendable {
    /// The status code.
    public var status: Int
    /// The body, decoded as UTF-8.
    public var body: String
  }

  /// GETs `path`; nil when nothing answered within `timeout` seconds or the answer was not HTTP.
  public static func get(port: Int, path: String, timeout: Double = 2) -> Answer? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
    guard connected else { return nil }
    let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
    guard
      request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
    else { return nil }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while response.count < 4 * 1024 * 1024 {
      let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { break }
      response += buffer[0..<count]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard text.hasPrefix("HTTP/"), let status = Int(text.split(separator: " ").dropFirst().first ?? "")
    else { return nil }
    let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
    return Answer(status: status, body: body)
  }
}
