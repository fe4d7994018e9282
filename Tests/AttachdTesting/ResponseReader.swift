import HTTP

/// Takes responses out of the bytes a connection received: a head, then a body framed by
/// `Content-Length`, by chunks or by the end of the connection.
struct ResponseReader {
  private var buffer: [UInt8] = []

  /// Bytes received and not yet part of a response.
  var unread: [UInt8] { buffer }

  mutating func append(_ bytes: [UInt8]) { buffer += bytes }

  mutating func discardUnread() { buffer = [] }

  /// Up to `count` unread bytes, taken as they are.
  mutating func take(_ count: Int) -> [UInt8] {
    let taken = Array(buffer.prefix(count))
    buffer.removeFirst(taken.count)
    return taken
  }

  /// The next response once it is whole in the buffer; nil while bytes are missing. `atEOF`:
  /// no more bytes will come, so a body without framing ends here (and a cut one is an error).
  mutating func next(forHead: Bool, atEOF: Bool) throws(TestClientError) -> TestResponse? {
    guard let headEnd = Self.find([13, 10, 13, 10], in: buffer, from: 0) else {
      if atEOF { throw TestClientError(buffer.isEmpty ? "closed before a response head" : "closed mid-head") }
      return nil
    }
    var response = try Self.parseHead(String(decoding: buffer[0..<headEnd], as: UTF8.self))
    let bodyStart = headEnd + 4
    let noBody = response.status < 200 || forHead || response.status == 204 || response.status == 304
    let end: Int
    if noBody {
      end = bodyStart
    } else if response["Transfer-Encoding"]?.lowercased() == "chunked" {
      guard let (body, chunksEnd) = try Self.chunkedBody(buffer, from: bodyStart) else {
        if atEOF { throw TestClientError("closed mid-chunk") }
        return nil
      }
      response.body = body
      end = chunksEnd
    } else if let length = response["Content-Length"].flatMap({ Int($0) }) {
      guard buffer.count - bodyStart >= length else {
        if atEOF { throw TestClientError("closed mid-body") }
        return nil
      }
      end = bodyStart + length
      response.body = Array(buffer[bodyStart..<end])
    } else {
      // Delimited by the end of the connection.
      guard atEOF else { return nil }
      end = buffer.count
      response.body = Array(buffer[bodyStart...])
    }
    buffer.removeFirst(end)
    return response
  }

  private static func parseHead(_ text: String) throws(TestClientError) -> TestResponse {
    var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
      throw TestClientError("bad status line in \(text)")
    }
    var headers = HTTPHeaders()
    for line in lines {
      let parts = line.split(separator: ":", maxSplits: 1)
      guard let name = parts.first else { continue }
      let value = parts.count > 1 ? parts[1].trimmingASCIIWhitespace() : ""
      headers.add(name: String(name), value: String(value))
    }
    return TestResponse(status: status, headers: headers, head: text)
  }

  /// The decoded body and where its last chunk (and trailers) end; nil while incomplete. The
  /// chunks are walked first without copying, so a long body arriving in many reads is
  /// decoded once.
  private static func chunkedBody(_ bytes: [UInt8], from start: Int) throws(TestClientError) -> (
    [UInt8], Int
  )? {
    var chunks: [Range<Int>] = []
    var position = start
    while true {
      guard let lineEnd = find([13, 10], in: bytes, from: position) else { return nil }
      let line = String(decoding: bytes[position..<lineEnd], as: UTF8.self)
      guard let size = Int(line.split(separator: ";").first ?? "", radix: 16) else {
        throw TestClientError("bad chunk size \(line)")
      }
      position = lineEnd + 2
      if size == 0 { break }
      guard bytes.count >= position + size + 2 else { return nil }
      chunks.append(position..<(position + size))
      position += size + 2
    }
    // Trailer fields, then the empty line.
    while true {
      guard let end = find([13, 10], in: bytes, from: position) else { return nil }
      if end == position { break }
      position = end + 2
    }
    var body: [UInt8] = []
    body.reserveCapacity(chunks.reduce(0) { $0 + $1.count })
    for chunk in chunks { body += bytes[chunk] }
    return (body, position + 2)
  }

  private static func find(_ pattern: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
    guard bytes.count >= start + pattern.count else { return nil }
    for index in start...(bytes.count - pattern.count)
    where bytes[index] == pattern[0] && bytes[index..<(index + pattern.count)].elementsEqual(pattern) {
      return index
    }
    return nil
  }
}
