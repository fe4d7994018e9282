import Dispatch
import Foundation
import Glibc
import HTTP
import Server
import Synchronization

/// A server on 127.0.0.1:0 running `run()` on its own thread, stopped (bounded) by `stop()`.
final class LiveServer: Sendable {
  let server: Server
  private let finished = DispatchSemaphore(value: 0)
  private let returned = Atomic<Bool>(false)

  init(_ configure: (inout Server.Configuration) -> Void = { _ in }, handler: some HTTPHandler) throws {
    var configuration = Server.Configuration()
    configuration.port = 0
    configuration.loopCount = 2
    configuration.workerThreads = 2
    configuration.handleSignals = false
    configure(&configuration)
    server = try Server(configuration: configuration, handler: handler)
    let thread = Thread { [self] in
      try? server.run()
      returned.store(true, ordering: .releasing)
      finished.signal()
    }
    thread.start()
  }

  var port: Int { server.localPort }
  var hasReturned: Bool { returned.load(ordering: .acquiring) }

  /// Shuts down and waits up to `timeout` for `run()` to return; true when it did.
  @discardableResult
  func stop(timeout: Double = 10) -> Bool {
    server.shutdown()
    return waitForReturn(timeout: timeout)
  }

  func waitForReturn(timeout: Double) -> Bool {
    if hasReturned { return true }
    guard finished.wait(timeout: .now() + timeout) == .success else { return false }
    finished.signal()
    return true
  }
}

/// A parsed response as a client saw it.
struct ClientResponse {
  var status: Int
  var headers: [(String, String)]
  var body: [UInt8]

  func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
  var text: String { String(decoding: body, as: UTF8.self) }
}

struct ClientError: Error, CustomStringConvertible {
  var description: String
}

/// A blocking POSIX client socket with a receive timeout: every read is bounded.
final class RawClient {
  let fd: Int32
  private var buffer: [UInt8] = []
  /// Microseconds to wait before each read: a slow reader.
  var readDelay: UInt32 = 0

  /// Connects; `receiveBuffer` (set before connecting) keeps the kernel from buffering much of
  /// a response the test wants to read slowly.
  init(port: Int, timeout: Double = 5, receiveBuffer: Int32? = nil) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    if var size = receiveBuffer {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
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
      let err = errno
      Glibc.close(fd)
      throw ClientError(description: "connect failed: errno \(err)")
    }
  }

  deinit { Glibc.close(fd) }

  /// Changes the send and receive timeouts.
  func setTimeout(_ timeout: Double) {
    var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
  }

  func send(_ text: String) throws { try send(Array(text.utf8)) }

  func send(_ bytes: [UInt8]) throws {
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n <= 0 { throw ClientError(description: "send failed: errno \(errno)") }
      sent += n
    }
  }

  /// Sends as much of `bytes` as the send timeout allows; returns how much went.
  func sendSome(_ bytes: [UInt8]) -> Int {
    var sent = 0
    while sent < bytes.count {
      let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if n <= 0 { break }
      sent += n
    }
    return sent
  }

  /// Makes closing this client reset the connection (RST) instead of ending it (FIN).
  func resetOnClose() {
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
  }

  /// Reads up to `count` more bytes of whatever comes (at least one unless the peer closed).
  func readSome(_ count: Int) throws -> [UInt8] {
    if buffer.isEmpty { _ = try fill(max: count) }
    let taken = Array(buffer.prefix(count))
    buffer.removeFirst(taken.count)
    return taken
  }

  /// Reads more bytes into the buffer; false on EOF or reset.
  private func fill(max: Int = 65536) throws -> Bool {
    if readDelay > 0 { usleep(readDelay) }
    var chunk = [UInt8](repeating: 0, count: max)
    let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    if n > 0 {
      buffer.append(contentsOf: chunk[0..<n])
      return true
    }
    if n == 0 || errno == ECONNRESET { return false }
    throw ClientError(description: "recv failed: errno \(errno) (timeout?)")
  }

  /// Reads one response (1xx responses count as one each).
  func readResponse(forHead: Bool = false) throws -> ClientResponse {
    let crlf2: [UInt8] = [13, 10, 13, 10]
    var end: Int?
    while true {
      if buffer.count >= 4 {
        end = (0...(buffer.count - 4)).first { buffer[$0..<$0 + 4].elementsEqual(crlf2) }
      }
      if end != nil { break }
      guard try fill() else { throw ClientError(description: "closed before a response head") }
    }
    let headText = String(decoding: buffer[0..<end!], as: UTF8.self)
    buffer.removeFirst(end! + 4)
    var lines = headText.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
      throw ClientError(description: "bad status line in \(headText)")
    }
    let headers = lines.map { line -> (String, String) in
      let parts = line.split(separator: ":", maxSplits: 1)
      return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
    }
    var response = ClientResponse(status: status, headers: headers, body: [])
    if status < 200 || forHead || status == 204 || status == 304 { return response }
    if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
      response.body = try readChunkedBody()
    } else if let length = response.header("Content-Length").flatMap({ Int($0) }) {
      try fill(to: length)
      response.body = Array(buffer[0..<length])
      buffer.removeFirst(length)
    } else {
      // Delimited by the connection's end.
      while try fill() {}
      response.body = buffer
      buffer = []
    }
    return response
  }

  private func fill(to count: Int) throws {
    while buffer.count < count {
      guard try fill() else { throw ClientError(description: "closed mid-body") }
    }
  }

  /// A line ending with CRLF, without it.
  private func readLine() throws -> [UInt8] {
    while true {
      if let end = buffer.indices.dropLast().first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 }) {
        let line = Array(buffer[0..<end])
        buffer.removeFirst(end + 2)
        return line
      }
      guard try fill() else { throw ClientError(description: "closed mid-body") }
    }
  }

  private func readChunkedBody() throws -> [UInt8] {
    var body: [UInt8] = []
    while true {
      let line = String(decoding: try readLine(), as: UTF8.self)
      guard let size = Int(line.split(separator: ";")[0], radix: 16) else {
        throw ClientError(description: "bad chunk size line \(line)")
      }
      if size == 0 {
        // Trailers, then the empty line.
        while try !readLine().isEmpty {}
        return body
      }
      try fill(to: size + 2)
      body += buffer[0..<size]
      buffer.removeFirst(size + 2)
    }
  }

  /// True when the server closes the connection (EOF or reset) within the receive timeout,
  /// ignoring bytes that arrive before.
  func waitForClose() -> Bool {
    while true {
      do {
        if try !fill() { return true }
      } catch {
        return false
      }
    }
  }

  /// Bytes received and not yet returned by `readResponse`.
  var unread: [UInt8] { buffer }
}

/// Thread-safe event list the test handlers write and the tests read.
final class Recorder: Sendable {
  private let events = Mutex<[String]>([])

  func record(_ event: String) { events.withLock { $0.append(event) } }
  var all: [String] { events.withLock { $0 } }

  /// Polls (bounded) until `predicate` holds; returns whether it did.
  func wait(timeout: Double = 5, until predicate: ([String]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if predicate(all) { return true }
      usleep(10_000)
    }
    return predicate(all)
  }
}

/// Runs a command to completion (bounded by `timeout`), returning status and stdout.
func runProcess(_ path: String, _ arguments: [String], stdin: Data? = nil, timeout: Double = 20) throws -> (
  status: Int32, output: String
) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  let out = Pipe()
  process.standardOutput = out
  process.standardError = FileHandle.standardError
  let input = Pipe()
  if stdin != nil { process.standardInput = input }
  try process.run()
  if let stdin {
    input.fileHandleForWriting.write(stdin)
    try input.fileHandleForWriting.close()
  }
  let done = DispatchSemaphore(value: 0)
  let collected = Mutex(Data())
  DispatchQueue.global().async {
    let data = out.fileHandleForReading.readDataToEndOfFile()
    collected.withLock { $0 = data }
    done.signal()
  }
  if done.wait(timeout: .now() + timeout) == .timedOut {
    process.terminate()
    throw ClientError(description: "\(path) timed out")
  }
  process.waitUntilExit()
  return (process.terminationStatus, String(decoding: collected.withLock { $0 }, as: UTF8.self))
}
