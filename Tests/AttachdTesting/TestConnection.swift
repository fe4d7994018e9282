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

  init(wire: any TestWire) {
    self.wire = wire
  }

  deinit { wire.close(reset: false) }

  /// A connection to a server on 127.0.0.1:`port` whose reads and writes give up after
  /// `timeout` seconds (what `TestClient(.live(port:)).connect()` makes, with its own limit).
  public static func live(port: Int, timeout: Double = 10) throws -> TestConnection {
    TestConnection(wire: try LiveWire(port: port, timeout: timeout))
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
    if let bytes = try wire.receive() {
      reader.append(bytes)
    } else {
      atEOF = true
    }
  }
}
