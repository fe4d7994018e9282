import Foundation
import Glibc

/// A TCP front on 127.0.0.1 for fault injection with real sockets: it forwards every connection
/// to `upstream`, and can cut the connections once `cutAfter` bytes of requests went through
/// (a phone losing its network mid-body), or answer the first requests itself with a status
/// and `Retry-After` (a load balancer shedding load) before forwarding.
final class TCPFront: @unchecked Sendable {
  let port: Int
  private let listener: Int32
  private let upstream: Int
  private let lock = NSLock()
  private var forwarded = 0
  private var cutAfter: Int?
  private var faults: [Int]
  private var loseFirstAnswer: Bool
  private(set) var connections = 0
  private(set) var cuts = 0

  /// `faults`: statuses (429, 503) answered to the first requests, one per connection.
  /// `loseFirstAnswer`: the first response is not relayed, the connection is cut instead (the
  /// server did the work, the client never heard).
  init(upstream: Int, cutAfter: Int? = nil, faults: [Int] = [], loseFirstAnswer: Bool = false) throws {
    self.upstream = upstream
    self.loseFirstAnswer = loseFirstAnswer
    self.cutAfter = cutAfter
    self.faults = faults
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var one: Int32 = 1
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = Self.loopback(port: 0)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard bound == 0, listen(listener, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    self.listener = listener
    port = Int(UInt16(bigEndian: address.sin_port))
    Thread { [self] in acceptLoop() }.start()
  }

  deinit {
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
  }

  var counts: (connections: Int, cuts: Int) { lock.withLock { (connections, cuts) } }

  private func acceptLoop() {
    while true {
      let client = accept(listener, nil, nil)
      if client < 0 { return }
      let fault: Int? = lock.withLock {
        connections += 1
        return faults.isEmpty ? nil : faults.removeFirst()
      }
      Thread { [self] in
        if let fault { answer(client, status: fault) } else { forward(client) }
      }.start()
    }
  }

  /// Reads one request (head, and the body `Content-Length` announces) and answers `status`.
  private func answer(_ client: Int32, status: Int) {
    defer { close(client) }
    var received = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65536)
    var expected: Int?
    while expected.map({ received.count < $0 }) ?? true {
      let n = read(client, &buffer, buffer.count)
      if n <= 0 { return }
      received += buffer[0..<n]
      if expected == nil, let end = received.firstRange(of: Array("\r\n\r\n".utf8)) {
        let head = String(decoding: received[..<end.lowerBound], as: UTF8.self).lowercased()
        let length =
          head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
          .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        expected = end.upperBound + length
      }
    }
    let code = status == 429 ? "rate_limited" : "overloaded"
    let body = #"{"type":"about:blank","status":\#(status),"code":"\#(code)","title":"Try later"}"#
    let response =
      "HTTP/1.1 \(status) Try later\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\n"
      + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    _ = response.withCString { write(client, $0, strlen($0)) }
  }

  private func forward(_ client: Int32) {
    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = Self.loopback(port: upstream)
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else {
      close(client)
      close(server)
      return
    }
    let done = DispatchGroup()
    done.enter()
    Thread { [self] in
      pump(from: server, to: client, counted: false)
      done.leave()
    }.start()
    pump(from: client, to: server, counted: true)
    done.wait()
    close(client)
    close(server)
  }

  /// Copies until either side ends; request bytes count towards the cut, which ends both sides.
  private func pump(from source: Int32, to sink: Int32, counted: Bool) {
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = read(source, &buffer, buffer.count)
      if n <= 0 { break }
      let cut: Bool = lock.withLock {
        if !counted {
          guard loseFirstAnswer else { return false }
          loseFirstAnswer = false
          cuts += 1
          return true
        }
        forwarded += n
        guard let limit = cutAfter, forwarded >= limit else { return false }
        cutAfter = nil
        cuts += 1
        return true
      }
      if cut { break }
      var sent = 0
      while sent < n {
        let w = buffer.withUnsafeBytes { write(sink, $0.baseAddress! + sent, n - sent) }
        if w <= 0 { break }
        sent += w
      }
    }
    shutdown(source, Int32(SHUT_RDWR))
    shutdown(sink, Int32(SHUT_RDWR))
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
  }
}
