import Glibc

/// The two directions of one connection as a test client uses them: bytes to the server, and
/// the bytes it sends back.
protocol TestWire: AnyObject, Sendable {
  /// Sends every byte (or throws).
  func send(_ bytes: [UInt8]) throws(TestClientError)
  /// Sends as much of `bytes` as the server takes within the timeout; returns how much went.
  func sendSome(_ bytes: [UInt8]) -> Int
  /// Ends the client's sending side (a FIN) and keeps reading.
  func finishSending()
  /// Changes how long a read or write may wait.
  func setTimeout(_ timeout: Double)
  /// The next bytes the server sent; nil once it has closed the connection (EOF or reset).
  /// Throws when nothing came within the timeout.
  func receive() throws(TestClientError) -> [UInt8]?
  /// Ends the connection from the client's side: a FIN, or with `reset` an RST.
  func close(reset: Bool)
}

/// A blocking TCP socket to 127.0.0.1 whose reads and writes time out.
///
/// `@unchecked Sendable`: the descriptor is set once; one thread may read while another
/// sends (a client reading progress `104`s mid-body).
final class LiveWire: TestWire, @unchecked Sendable {
  private let fd: Int32
  private var isClosed = false

  /// Connects to 127.0.0.1:`port`; reads and writes time out after `timeout` seconds.
  /// `receiveBuffer` (set before connecting) keeps the kernel from buffering much of a
  /// response a test wants to read slowly.
  init(port: Int, timeout: Double, receiveBuffer: Int32? = nil) throws(TestClientError) {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestClientError("socket failed: errno \(errno)") }
    if var size = receiveBuffer {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    setTimeout(timeout)
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
      throw TestClientError("connect to \(port) failed: errno \(code)")
    }
  }

  deinit { close(reset: false) }

  /// Changes the send and receive timeouts.
  func setTimeout(_ timeout: Double) {
    var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
  }

  func send(_ bytes: [UInt8]) throws(TestClientError) {
    let sent = sendSome(bytes)
    if sent < bytes.count { throw TestClientError("send failed after \(sent) bytes: errno \(errno)") }
  }

  func sendSome(_ bytes: [UInt8]) -> Int {
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n < 0 && errno == EINTR { continue }
      if n <= 0 { break }
      sent += n
    }
    return sent
  }

  func finishSending() {
    shutdown(fd, Int32(SHUT_WR))
  }

  func receive() throws(TestClientError) -> [UInt8]? {
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      if n > 0 { return Array(chunk[0..<n]) }
      if n < 0 && errno == EINTR { continue }
      if n == 0 || errno == ECONNRESET { return nil }
      throw TestClientError("recv failed: errno \(errno) (timeout?)")
    }
  }

  func close(reset: Bool) {
    guard !isClosed else { return }
    isClosed = true
    if reset {
      var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }
    Glibc.close(fd)
  }
}
