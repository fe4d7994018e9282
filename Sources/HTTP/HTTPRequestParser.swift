/// An incremental HTTP/1.1 request parser (RFC 9112): bytes in, events out, no I/O.
///
/// The caller owns the read buffer. Each call to ``next(_:)`` consumes a prefix of `input` and
/// returns at most one event; bytes not consumed must be passed again at the start of the next
/// call, followed by whatever arrived since. Call `next` until it returns a nil event, then read
/// more. Body events are ranges into the `input` of that call (no copy). After `.end` the parser
/// expects the next (pipelined) request. After an error the connection must be closed.
///
/// Decisions beyond the RFC's MUSTs, chosen for safety against request smuggling:
/// - Lines end in CRLF only; a bare LF or a bare CR anywhere in the head, a chunk line or the
///   trailers is refused.
/// - Up to `maxRequestLineBytes` of empty lines before a request line are skipped (RFC 9112 §2.2).
/// - A request line longer than `maxRequestLineBytes` is answered with 414.
/// - Repeated `Content-Length` values (several fields or a list) are accepted when all are
///   identical (RFC 9110 §8.6); anything else about `Content-Length` that is not 1*DIGIT is refused.
/// - `Transfer-Encoding` must be exactly `chunked` (any case); other codings before it are 501.
/// - An HTTP/1.1 request needs exactly one `Host` field.
public struct HTTPRequestParser: Sendable {
  /// Sizes the parser refuses to buffer beyond.
  public struct Limits: Sendable, Equatable {
    /// Request line plus any leading empty lines, CRLF included (→ 414).
    public var maxRequestLineBytes: Int
    /// Field lines after the request line, CRLFs included (→ 431).
    public var maxHeaderBytes: Int
    /// Field lines in the header or trailer section (→ 431).
    public var maxHeaderFields: Int
    /// One chunk-size line with its extensions and CRLF (→ 400).
    public var maxChunkLineBytes: Int
    /// The trailer section, CRLFs included (→ 431).
    public var maxTrailerBytes: Int

    public init(
      maxRequestLineBytes: Int = 8192, maxHeaderBytes: Int = 65536, maxHeaderFields: Int = 100,
      maxChunkLineBytes: Int = 4096, maxTrailerBytes: Int = 16384
    ) {
      self.maxRequestLineBytes = maxRequestLineBytes
      self.maxHeaderBytes = maxHeaderBytes
      self.maxHeaderFields = maxHeaderFields
      self.maxChunkLineBytes = maxChunkLineBytes
      self.maxTrailerBytes = maxTrailerBytes
    }
  }

  /// What the parser found.
  public enum Event: Equatable, Sendable {
    /// A complete request line and header section.
    case head(HTTPRequestHead)
    /// Body bytes: indices into the `input` of the call that returned this event.
    case body(Range<Int>)
    /// The message is complete; chunked bodies may carry trailer fields.
    case end(trailers: HTTPHeaders)
  }

  enum State: Sendable {
    case head
    case fixedBody(remaining: UInt64)
    case chunkLine
    case chunkData(remaining: UInt64)
    case chunkDataEnd
    case trailers
    case failed(HTTPParserError)
  }

  let limits: Limits
  var state: State = .head
  // Scan progress inside the current block (head, chunk line or trailers), relative to the
  // start of the input the caller presents next, so that a slowly arriving block is scanned once.
  var scanPosition = 0
  var fieldLines = 0
  var headStart = 0
  var requestLineEnd: Int? = nil

  public init(limits: Limits = .init()) {
    self.limits = limits
  }

  /// Consumes a prefix of `input` and returns the next event (nil = need more bytes) and how
  /// many bytes it consumed.
  public mutating func next(_ input: UnsafeRawBufferPointer) throws(HTTPParserError) -> (
    event: Event?, consumed: Int
  ) {
    do throws(HTTPParserError) {
      return try step(input)
    } catch {
      state = .failed(error)
      throw error
    }
  }

  private mutating func step(_ input: UnsafeRawBufferPointer) throws(HTTPParserError) -> (
    event: Event?, consumed: Int
  ) {
    var offset = 0
    while true {
      let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
      switch state {
      case .failed(let error):
        throw error

      case .head:
        guard let (head, used) = try scanHead(rest) else { return (nil, offset) }
        switch head.framing {
        case .none: state = .fixedBody(remaining: 0)
        case .contentLength(let n): state = .fixedBody(remaining: n)
        case .chunked: state = .chunkLine
        }
        return (.head(head), offset + used)

      case .fixedBody(let remaining):
        if remaining == 0 {
          state = .head
          return (.end(trailers: HTTPHeaders()), offset)
        }
        if rest.isEmpty { return (nil, offset) }
        let n = Int(min(remaining, UInt64(rest.count)))
        state = .fixedBody(remaining: remaining - UInt64(n))
        return (.body(offset..<offset + n), offset + n)

      case .chunkLine:
        guard let (size, used) = try scanChunkLine(rest) else { return (nil, offset) }
        offset += used
        state = size == 0 ? .trailers : .chunkData(remaining: size)

      case .chunkData(let remaining):
        if rest.isEmpty { return (nil, offset) }
        let n = Int(min(remaining, UInt64(rest.count)))
        let left = remaining - UInt64(n)
        state = left == 0 ? .chunkDataEnd : .chunkData(remaining: left)
        return (.body(offset..<offset + n), offset + n)

      case .chunkDataEnd:
        if rest.count < 2 {
          if rest.count == 1 && rest[0] != ASCII.cr { throw HTTPParserError(.missingChunkDataCRLF) }
          return (nil, offset)
        }
        guard rest[0] == ASCII.cr, rest[1] == ASCII.lf else {
          throw HTTPParserError(.missingChunkDataCRLF)
        }
        offset += 2
        state = .chunkLine

      case .trailers:
        guard let (trailers, used) = try scanTrailers(rest) else { return (nil, offset) }
        state = .head
        return (.end(trailers: trailers), offset + used)
      }
    }
  }

  mutating func resetScan() {
    scanPosition = 0
    fieldLines = 0
    headStart = 0
    requestLineEnd = nil
  }

  /// Finds the end of a block of field lines that starts at `blockStart`: the index after the
  /// CRLF of its empty line, or nil when more bytes are needed. Counts lines against the limits.
  mutating func scanFieldLines(
    _ input: UnsafeRawBufferPointer, blockStart: Int, maxBytes: Int, tooLarge: HTTPParserError.Kind
  ) throws(HTTPParserError) -> Int? {
    var position = max(scanPosition, blockStart)
    while let lf = input.firstIndex(of: ASCII.lf, from: position) {
      // The same test as for an incomplete tail below, first, so that the outcome does not
      // depend on how the bytes were split.
      if lf - blockStart > maxBytes + 2 { throw HTTPParserError(tooLarge) }
      guard lf > position, input[lf - 1] == ASCII.cr else { throw HTTPParserError(.bareLF) }
      if lf - 1 == position { return lf + 1 }
      fieldLines += 1
      if fieldLines > limits.maxHeaderFields { throw HTTPParserError(.tooManyHeaderFields) }
      if lf + 1 - blockStart > maxBytes { throw HTTPParserError(tooLarge) }
      position = lf + 1
    }
    // The incomplete tail could still end in the 2-byte empty line, hence the slack.
    if input.count - blockStart > maxBytes + 2 { throw HTTPParserError(tooLarge) }
    scanPosition = position
    return nil
  }

  /// Scans for a complete head; parses it once it is all there.
  private mutating func scanHead(_ input: UnsafeRawBufferPointer) throws(HTTPParserError) -> (
    HTTPRequestHead, Int
  )? {
    if requestLineEnd == nil {
      var position = scanPosition
      while true {
        let lf = input.firstIndex(of: ASCII.lf, from: position)
        // Checks that an incomplete line allows come first, whether or not the LF is there, so
        // that every split of the bytes gives the same outcome.
        // Garbage (a TLS hello, a binary protocol) is refused at once, not after 8 KiB.
        if headStart < input.count {
          let first = input[headStart]
          if !ASCII.isTchar(first), first != ASCII.cr, first != ASCII.lf {
            throw HTTPParserError(.invalidRequestLine)
          }
        }
        if (lf ?? input.count) > limits.maxRequestLineBytes { throw HTTPParserError(.requestLineTooLong) }
        guard let lf else {
          scanPosition = position
          return nil
        }
        if lf + 1 > limits.maxRequestLineBytes { throw HTTPParserError(.requestLineTooLong) }
        guard lf > position, input[lf - 1] == ASCII.cr else { throw HTTPParserError(.bareLF) }
        position = lf + 1
        if lf - 1 == headStart {
          headStart = position  // an empty line before the request line
          continue
        }
        requestLineEnd = position
        scanPosition = position
        break
      }
    }
    let fieldsStart = requestLineEnd!
    guard
      let end = try scanFieldLines(
        input, blockStart: fieldsStart, maxBytes: limits.maxHeaderBytes, tooLarge: .headerBlockTooLarge)
    else { return nil }
    let head = try parseHead(input, requestLine: headStart..<fieldsStart - 2, fields: fieldsStart..<end - 2)
    resetScan()
    return (head, end)
  }

  /// Scans for a complete chunk-size line and returns the chunk size and the line's length.
  private mutating func scanChunkLine(_ input: UnsafeRawBufferPointer) throws(HTTPParserError) -> (
    UInt64, Int
  )? {
    guard let lf = input.firstIndex(of: ASCII.lf, from: scanPosition) else {
      if input.count > limits.maxChunkLineBytes { throw HTTPParserError(.chunkLineTooLong) }
      scanPosition = input.count
      return nil
    }
    if lf + 1 > limits.maxChunkLineBytes { throw HTTPParserError(.chunkLineTooLong) }
    guard lf > 0, input[lf - 1] == ASCII.cr else { throw HTTPParserError(.bareLF) }
    let size = try Self.parseChunkLine(input, 0..<lf - 1)
    resetScan()
    return (size, lf + 1)
  }

  /// Scans for the complete trailer section and parses it.
  private mutating func scanTrailers(_ input: UnsafeRawBufferPointer) throws(HTTPParserError) -> (
    HTTPHeaders, Int
  )? {
    guard
      let end = try scanFieldLines(
        input, blockStart: 0, maxBytes: limits.maxTrailerBytes, tooLarge: .trailersTooLarge)
    else { return nil }
    var trailers = HTTPHeaders()
    try Self.parseFieldLines(input, 0..<end - 2) { name, value throws(HTTPParserError) in
      trailers.add(name: input.string(name), value: input.string(value))
    }
    resetScan()
    return (trailers, end)
  }
}
