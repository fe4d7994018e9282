import Foundation
import Glibc
import Synchronization

/// A tiny HTTP/1.1 server on 127.0.0.1:0 that records every request and answers as the test
/// scripts it: the failure shapes a real S3 server will not produce on demand (503, a dropped
/// connection, a body cut short, silence), and a capture of exactly what a client sent.
///
/// One thread per connection, keep-alive, `100 Continue` when asked, bodies by Content-Length
/// only (a chunked request is recorded and answered 411). Every socket read is bounded (10 s),
/// and `stop()` (which the test must call: the accept thread keeps the server alive) closes
/// everything.
final class ScriptedHTTPServer: Sendable {
  /// A request as it arrived.
  struct Request: Sendable {
    var method: String
    /// The request target exactly as sent (path and query, still encoded).
    var target: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// The first value of a header (name compared case-insensitively).
    func header(_ name: String) -> String? {
      headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
  }

  /// What to do with a request.
  enum Reply: Sendable {
    /// A complete response (Content-Length is added).
    case respond(Int, headers: [(String, String)] = [], body: [UInt8] = [])
    /// Headers announcing `body`, then only its first `sent` bytes, then the connection closes.
    case cut(Int, headers: [(String, String)] = [], body: [UInt8], sent: Int)
    /// Close the connection without a word.
    case close
    /// Say nothing, keep the connection open (until `stop`).
    case hang
  }

  let port: Int
  private let listener: Int32
  private let script: @Sendable (Request, Int) -> Reply
  private let recorded = Mutex<[Request]>([])
  private let connections = Mutex<Set<Int32>>([])
  private let stopped = Atomic<Bool>(false)
  private let accepted = Atomic<Int>(0)

  /// Listens now; `script(request, index)` decides each answer (`index` counts from 0).
  init(_ script: @escaping @Sendable (Request, Int) -> Reply) throws {
    self.script = script
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0
      }
    }
    guard bound else {
      close(fd)
      throw POSIXError(.EADDRNOTAVAIL)
    }
    listener = fd
    port = Int(UInt16(bigEndian: address.sin_port))
    Thread { [self] in acceptLoop() }.start()
  }

  /// Every request so far, in arrival order.
  var requests: [Request] { recorded.withLock { $0 } }

  /// How many connections were accepted so far.
  var connectionCount: Int { accepted.load(ordering: .acquiring) }

  /// Closes the listener and every connection.
  func stop() {
    guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
    connections.withLock { open in
      for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }
  }

  private func acceptLoop() {
    while !stopped.load(ordering: .acquiring) {
      let fd = accept(listener, nil, nil)
      guard fd >= 0 else {
        if errno == EINTR { continue }
        return
      }
      var timeout = timeval(tv_sec: 10, tv_usec: 0)
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      accepted.add(1, ordering: .acquiringAndReleasing)
      connections.withLock { _ = $0.insert(fd) }
      Thread { [self] in
        serve(fd)
        connections.withLock { _ = $0.remove(fd) }
        close(fd)
      }.start()
    }
  }

  private func serve(_ fd: Int32) {
    var buffer: [UInt8] = []
    while !stopped.load(ordering: .acquiring) {
      guard let headEnd = fill(fd, &buffer, until: { Self.find([13, 10, 13, 10], in: $0) }) else { return }
      let head = String(decoding: buffer[..<headEnd], as: UTF8.self)
      buffer.removeFirst(headEnd + 4)
      let lines = head.components(separatedBy: "\r\n")
      let requestLine = lines[0].split(separator: " ")
      guard requestLine.count == 3 else { return }
      var request = Request(
        method: String(requestLine[0]), target: String(requestLine[1]), headers: [], body: [])
      for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        request.headers.append(
          (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
      }
      if request.header("transfer-encoding") != nil {
        record(request)
        send(fd, Self.response(411, [], []))
        return
      }
      if request.header("expect")?.lowercased() == "100-continue" {
        send(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
      }
      let length = Int(request.header("content-length") ?? "0") ?? 0
      guard fill(fd, &buffer, until: { $0.count >= length ? length : nil }) != nil else { return }
      request.body = Array(buffer.prefix(length))
      buffer.removeFirst(length)
      let index = record(request)
      switch script(request, index) {
      case .respond(let status, let headers, let body):
        send(fd, Self.response(status, headers, body, head: request.method == "HEAD"))
      case .cut(let status, let headers, let body, let sent):
        send(fd, Self.response(status, headers, body).dropLast(body.count - sent))
        return
      case .close:
        return
      case .hang:
        while !stopped.load(ordering: .acquiring) { usleep(20_000) }
        return
      }
    }
  }

  @discardableResult
  private func record(_ request: Request) -> Int {
    recorded.withLock {
      $0.append(request)
      return $0.count - 1
    }
  }

  /// Reads until `done` finds what it wants in the buffer; nil at end of stream or timeout.
  private func fill(_ fd: Int32, _ buffer: inout [UInt8], until done: ([UInt8]) -> Int?) -> Int? {
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      if let found = done(buffer) { return found }
      let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return nil }
      buffer += chunk[0..<count]
    }
  }

  private func send(_ fd: Int32, _ bytes: some Collection<UInt8>) {
    let bytes = Array(bytes)
    var offset = 0
    while offset < bytes.count {
      let sent = bytes.withUnsafeBytes {
        Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
      }
      if sent < 0 && errno == EINTR { continue }
      guard sent > 0 else { return }
      offset += sent
    }
  }

  private static func response(
    _ status: Int, _ headers: [(String, String)], _ body: [UInt8], head: Bool = false
  )
    -> [UInt8]
  {
    var text = "HTTP/1.1 \(status) Scripted\r\n"
    for (name, value) in headers { text += "\(name): \(value)\r\n" }
    if !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
      text += "Content-Length: \(body.count)\r\n"
    }
    return Array((text + "\r\n").utf8) + (head ? [] : body)
  }

  private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for index in 0...(haystack.count - needle.count)
    where haystack[index..<(index + needle.count)].elementsEqual(needle) {
      return index
    }
    return nil
  }
}
