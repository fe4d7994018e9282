import HTTP

// A stand-in for the HTTP module's request parser (same API) until it lands; deleted then.

public struct HTTPParserError: Error, Sendable {
  public enum Kind: Sendable { case malformed, tooLarge, headerTooLarge, unsupported }
  public var status: Int
  public var kind: Kind
}

public struct HTTPRequestParser: Sendable {
  public struct Limits: Sendable, Equatable {
    public var maxHeaderBytes = 65536
    public var maxHeaderCount = 100
    public init() {}
  }
  public enum Event {
    case head(HTTPRequestHead)
    case body(Range<Int>)
    case end(trailers: HTTPHeaders)
  }
  private enum State {
    case head
    case fixed(UInt64)
    case chunkSize
    case chunkData(UInt64)
    case chunkCRLF
    case trailers
    case end
  }
  private var state = State.head
  let limits: Limits

  public init(limits: Limits = .init()) { self.limits = limits }

  public mutating func next(_ input: UnsafeRawBufferPointer) throws(HTTPParserError) -> (event: Event?, consumed: Int) {
    let bytes = input.bindMemory(to: UInt8.self)
    switch state {
    case .head:
      guard let end = find(bytes, [13, 10, 13, 10]) else {
        if bytes.count > limits.maxHeaderBytes { throw HTTPParserError(status: 431, kind: .headerTooLarge) }
        return (nil, 0)
      }
      if end > limits.maxHeaderBytes { throw HTTPParserError(status: 431, kind: .headerTooLarge) }
      let head = try parseHead(String(decoding: bytes[0..<end], as: UTF8.self))
      switch head.framing {
      case .none: state = .end
      case .contentLength(let n): state = n == 0 ? .end : .fixed(n)
      case .chunked: state = .chunkSize
      }
      return (.head(head), end + 4)
    case .end:
      state = .head
      return (.end(trailers: [:]), 0)
    case .fixed(let remaining):
      let n = Int(min(remaining, UInt64(bytes.count)))
      if n == 0 { return (nil, 0) }
      state = remaining == UInt64(n) ? .end : .fixed(remaining - UInt64(n))
      return (.body(0..<n), n)
    case .chunkSize:
      guard let lineEnd = find(bytes, [13, 10]) else { return (nil, 0) }
      var size: UInt64 = 0
      var digits = 0
      for b in bytes[0..<lineEnd] {
        let v: UInt8
        switch b {
        case 0x30...0x39: v = b - 0x30
        case 0x41...0x46: v = b - 0x41 + 10
        case 0x61...0x66: v = b - 0x61 + 10
        default: v = 255
        }
        if v == 255 { break }
        guard size >> 60 == 0 else { throw HTTPParserError(status: 400, kind: .malformed) }
        size = size << 4 | UInt64(v)
        digits += 1
      }
      if digits == 0 { throw HTTPParserError(status: 400, kind: .malformed) }
      state = size == 0 ? .trailers : .chunkData(size)
      return (nil, lineEnd + 2)
    case .chunkData(let remaining):
      let n = Int(min(remaining, UInt64(bytes.count)))
      if n == 0 { return (nil, 0) }
      state = remaining == UInt64(n) ? .chunkCRLF : .chunkData(remaining - UInt64(n))
      return (.body(0..<n), n)
    case .chunkCRLF:
      if bytes.count < 2 { return (nil, 0) }
      guard bytes[0] == 13 && bytes[1] == 10 else { throw HTTPParserError(status: 400, kind: .malformed) }
      state = .chunkSize
      return (nil, 2)
    case .trailers:
      if bytes.count >= 2 && bytes[0] == 13 && bytes[1] == 10 {
        state = .head
        return (.end(trailers: [:]), 2)
      }
      guard let end = find(bytes, [13, 10, 13, 10]) else { return (nil, 0) }
      var trailers = HTTPHeaders()
      for line in String(decoding: bytes[0..<end], as: UTF8.self).split(separator: "\r\n") {
        guard let colon = line.firstIndex(of: ":") else { throw HTTPParserError(status: 400, kind: .malformed) }
        trailers.add(
          name: String(line[..<colon]),
          value: line[line.index(after: colon)...].trimmingSpaces())
      }
      state = .head
      return (.end(trailers: trailers), end + 4)
    }
  }

  private func find(_ bytes: UnsafeBufferPointer<UInt8>, _ needle: [UInt8]) -> Int? {
    guard bytes.count >= needle.count else { return nil }
    var i = 0
    while i <= bytes.count - needle.count {
      if bytes[i] == needle[0] && needle.indices.allSatisfy({ bytes[i + $0] == needle[$0] }) { return i }
      i += 1
    }
    return nil
  }

  private func parseHead(_ text: String) throws(HTTPParserError) -> HTTPRequestHead {
    let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
    let parts = lines[0].split(separator: " ")
    guard parts.count == 3 else { throw HTTPParserError(status: 400, kind: .malformed) }
    let version: HTTPVersion
    switch parts[2] {
    case "HTTP/1.1": version = .http1_1
    case "HTTP/1.0": version = .http1_0
    default: throw HTTPParserError(status: 505, kind: .unsupported)
    }
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { throw HTTPParserError(status: 400, kind: .malformed) }
      headers.add(
        name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingSpaces())
    }
    if headers.count > limits.maxHeaderCount { throw HTTPParserError(status: 431, kind: .headerTooLarge) }
    var framing = HTTPBodyFraming.none
    if let te = headers.first(name: "transfer-encoding") {
      guard te.lowercased().hasSuffix("chunked") else { throw HTTPParserError(status: 501, kind: .unsupported) }
      framing = .chunked
    } else if let cl = headers.first(name: "content-length") {
      guard let n = UInt64(cl) else { throw HTTPParserError(status: 400, kind: .malformed) }
      framing = .contentLength(n)
    }
    let connection = headers.first(name: "connection")?.lowercased() ?? ""
    let keepAlive = version == .http1_1 ? !connection.contains("close") : connection.contains("keep-alive")
    let expects = headers.first(name: "expect")?.lowercased() == "100-continue"
    return HTTPRequestHead(
      method: String(parts[0]), target: String(parts[1]), version: version, headers: headers,
      framing: framing, keepAlive: keepAlive, expectsContinue: expects)
  }
}

extension Substring {
  fileprivate func trimmingSpaces() -> String {
    String(self.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
  }
}
