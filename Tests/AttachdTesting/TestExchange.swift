import HTTP
import Synchronization

/// One request whose head has been sent: the body follows piece by piece (a slow client, a
/// client that leaves halfway), and answers are read as they come (a `104` before the body).
public final class TestExchange: Sendable {
  /// The connection the request is on.
  public let connection: TestConnection
  private let forHead: Bool
  /// Bodies sent through `send` are chunk-framed.
  private let chunked: Bool
  /// Interim responses `awaitContinue` read; the final response carries them.
  private let earlier = Mutex<[TestResponse]>([])

  init(connection: TestConnection, forHead: Bool, chunked: Bool) {
    self.connection = connection
    self.forHead = forHead
    self.chunked = chunked
  }

  /// Sends body bytes: as they are, or as one chunk when the body is chunked.
  public func send(_ bytes: [UInt8]) throws {
    guard chunked else { return try connection.send(bytes) }
    guard !bytes.isEmpty else { return }
    var chunk: [UInt8] = []
    HTTPResponseWriter.writeChunk(bytes, into: &chunk)
    try connection.send(chunk)
  }

  /// The next response: an interim one, or the final one when it comes first.
  public func readInterim() throws -> TestResponse {
    try connection.readResponse(forHead: forHead)
  }

  /// Waits for `100 Continue`: nil once it came, else the final answer that came first.
  func awaitContinue() throws -> TestResponse? {
    while true {
      let response = try connection.readResponse(forHead: forHead)
      if response.status >= 200 {
        var final = response
        final.interim = earlier.withLock { $0 }
        return final
      }
      earlier.withLock { $0.append(response) }
      if response.status == 100 { return nil }
    }
  }

  /// Ends a chunked body (the last chunk, with `trailers`), then reads the final response.
  public func finish(trailers: HTTPHeaders = [:]) throws -> TestResponse {
    if chunked {
      var last: [UInt8] = []
      HTTPResponseWriter.writeLastChunk(trailers: trailers, into: &last)
      // An answer that came first may have closed the connection: the answer is what counts.
      try? connection.send(last)
    }
    return try response()
  }

  /// Reads the final response, with the interim ones read on the way (not those
  /// `readInterim` returned).
  public func response() throws -> TestResponse {
    var final = try connection.readFinal(forHead: forHead)
    final.interim = earlier.withLock { $0 } + final.interim
    return final
  }

  /// The client leaves mid-request: the connection ends (with `reset`, by an RST).
  public func cancel(reset: Bool = false) { connection.close(reset: reset) }
}
