import Foundation

/// One connection to the application, in either mode of `TestClient`: the test writes request
/// bytes itself (any header spelling, a body cut anywhere) and reads every response, interim
/// (1xx) ones included. Every read is bounded by the client's timeout.
///
/// `@unchecked Sendable`: one thread may read responses while another sends; the read side
/// is touched by the reading thread only.
public final class TestConnection: @unchecked Sendable {
  private let wire: any TestWire
  private var reader = ResponseReader()
  private var atEOF = false
  /// Microseconds to wait before each read: a slow reader.
  public var readDelay: UInt32 = 0

  init(wire: any TestWire) {
    self.wire = wire
  }

  deinit { wire.close(reset: false) }

  /// A connection to a server on 127.0.0.1:`port` whose reads and writes give up after
  /// `timeout` seconds (what `TestClient(.live(port:)).connect()` makes, with its own limit).
  /// `receiveBuffer` (bytes) keeps the kernel from buffering much of an answer a test reads
  /// slowly.
  public static func live(port: Int, timeout: Double = 10, receiveBuffer: Int32? = nil) throws
    -> TestConnection
  {
    TestConnection(wire: try LiveWire(port: port, timeout: timeout, receiveBuffer: receiveBuffer))
  }

  /// A request head: the request line, the fields (`Name: value` each) and the blank line.
  public static func head(_ requestLine: String, _ fields: [String]) -> String {
    ([requestLine] + fields).joined(separator: "\r\n") + "\r\n\r\n"
  }

  /// Sends text as it is.
  public func send(_ text: String) throws { try send(Array(text.utf8)) }

  /// Sends bytes as they are.
  public func send(_ bytes: [UInt8]) throws {
    try wire.send(bytes)
  }

  /// Sends as much of `bytes` as the server takes within the timeout; returns how much went.
  public func sendSome(_ bytes: [UInt8]) -> Int { wire.sendSome(bytes) }

  /// Ends the sending side (a FIN) and keeps reading: the server may take it as the client gone.
  public func finishSending() { wire.finishSending() }

  /// Changes how long a read or write may wait.
  public func setTimeout(_ timeout: Double) { wire.setTimeout(timeout) }

  /// Ends the connection: a FIN, or with `reset` an RST. A request still being sent or
  /// answered is abandoned, as by a client that leaves.
  public func close(reset: Bool = false) { wire.close(reset: reset) }

  /// Reads the next response (an interim 1xx one counts as one). `forHead`: no body follows.
  public func readResponse(forHead: Bool = false) throws -> TestResponse {
    while true {
      if let response = try reader.next(forHead: forHead, atEOF: atEOF) { return response }
      try fill()
    }
  }

  /// Reads responses until a final one, which carries the interim ones read on the way.
  public func readFinal(forHead: Bool = false) throws -> TestResponse {
    var interim: [TestResponse] = []
    while true {
      var response = try readResponse(forHead: forHead)
      guard response.status >= 200 else {
        interim.append(response)
        continue
      }
      response.interim = interim
      return response
    }
  }

  /// Up to `count` bytes of whatever comes next, as they are (at least one unless the server
  /// closed the connection).
  public func readSome(_ count: Int) throws -> [UInt8] {
    if reader.unread.isEmpty { try fill() }
    return reader.take(count)
  }

  /// True when the server closes the connection within the timeout; bytes that arrive before
  /// are dropped.
  public func isClosedByPeer() -> Bool {
    while !atEOF {
      guard (try? fill()) != nil else { return false }
      reader.discardUnread()
    }
    return true
  }

  /// Bytes received and not yet part of a response read.
  public var unread: [UInt8] { reader.unread }

  private func fill() throws(TestClientError) {
    guard !atEOF else { return }
    if readDelay > 0 { usleep(readDelay) }
    if let bytes = try wire.receive() {
      reader.append(bytes)
    } else {
      atEOF = true
    }
  }
}
