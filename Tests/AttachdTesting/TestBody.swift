import HTTP

/// The body of a request `TestClient.execute` sends.
public enum TestBody: Sendable {
  /// No body, and no framing field.
  case empty
  /// Bytes with `Content-Length`, sent in one piece.
  case bytes([UInt8])
  /// `Transfer-Encoding: chunked`, one chunk per element, then the last chunk with `trailers`.
  case chunked([[UInt8]], trailers: HTTPHeaders = [:])

  /// `bytes` in chunks of at most `size` bytes.
  public static func chunked(_ bytes: [UInt8], size: Int) -> TestBody {
    .chunked(
      stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min(bytes.count, $0 + size)]) })
  }

  var framing: HTTPBodyFraming {
    switch self {
    case .empty: .none
    case .bytes(let bytes): .contentLength(UInt64(bytes.count))
    case .chunked: .chunked
    }
  }

  var trailers: HTTPHeaders {
    if case .chunked(_, let trailers) = self { return trailers }
    return [:]
  }

  func send(through exchange: TestExchange) throws {
    switch self {
    case .empty: break
    case .bytes(let bytes): try exchange.send(bytes)
    case .chunked(let chunks, _):
      for chunk in chunks { try exchange.send(chunk) }
    }
  }
}

extension HTTPHeaders {
  /// The fields of `lhs`, then those of `rhs`.
  public static func + (lhs: HTTPHeaders, rhs: HTTPHeaders) -> HTTPHeaders {
    var all = lhs
    for field in rhs { all.add(name: field.name, value: field.value) }
    return all
  }
}
