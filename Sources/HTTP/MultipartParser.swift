/// A streaming `multipart/form-data` parser (RFC 7578, RFC 2046 §5.1), pull-style like
/// ``HTTPRequestParser``.
///
/// Each call to ``next(_:)`` consumes a prefix of `input` and returns at most one event; bytes not
/// consumed must be passed again at the start of the next call, followed by what arrived since.
/// Call `next` until it returns a nil event, then read more; when the request body has ended, call
/// ``finish()``, which throws if the close delimiter never came. Part bodies are ranges into the
/// `input` of the call (no copy). Only a tail that could be the start of a delimiter is held back.
/// The preamble, transport padding after a delimiter and the epilogue are ignored.
public struct MultipartParser: Sendable {
  /// Sizes the parser refuses beyond.
  public struct Limits: Sendable {
    /// One part's header block, CRLFs included.
    public var maxPartHeaderBytes: Int
    /// Header fields in one part.
    public var maxPartHeaderFields: Int
    /// Body bytes of one part.
    public var maxPartBytes: Int
    /// The whole multipart body, framing, preamble and epilogue included.
    public var maxTotalBytes: Int
    /// Parts in the body.
    public var maxParts: Int

    public init(
      maxPartHeaderBytes: Int = 16384, maxPartHeaderFields: Int = 16, maxPartBytes: Int = .max,
      maxTotalBytes: Int = .max, maxParts: Int = 100
    ) {
      self.maxPartHeaderBytes = maxPartHeaderBytes
      self.maxPartHeaderFields = maxPartHeaderFields
      self.maxPartBytes = maxPartBytes
      self.maxTotalBytes = maxTotalBytes
      self.maxParts = maxParts
    }
  }

  /// What the parser found.
  public enum Event: Equatable, Sendable {
    /// A part starts; its headers are parsed.
    case partBegin(MultipartPartHead)
    /// Part body bytes: indices into the `input` of the call that returned this event.
    case partBody(Range<Int>)
    /// The current part is complete.
    case partEnd
    /// The close delimiter was seen; anything after it (the epilogue) is ignored.
    case end
  }

  enum State: Sendable {
    case preamble(atStart: Bool)
    case afterBoundary(padding: Int)
    case partHeaders
    case partBody
    case epilogue
    case failed(MultipartError)
  }

  // Transport padding (RFC 2046 whitespace after a delimiter) accepted before the CRLF.
  static let maxTransportPadding = 256

  let limits: Limits
  /// `CRLF "--" boundary`.
  let delimiter: [UInt8]
  var state: State = .preamble(atStart: true)
  var scanPosition = 0
  var headerLines = 0
  var parts = 0
  var partBytes = 0
  var totalBytes = 0

  /// A parser for bodies delimited by `boundary` (as from ``boundary(fromContentType:)``).
  public init(boundary: String, limits: Limits = .init()) throws(MultipartError) {
    guard Self.isValidBoundary(Array(boundary.utf8)) else { throw MultipartError(.invalidBoundary) }
    self.delimiter = Array("\r\n--\(boundary)".utf8)
    self.limits = limits
  }

  /// Whether the close delimiter has been seen.
  public var isComplete: Bool {
    if case .epilogue = state { return true }
    return false
  }

  /// Consumes a prefix of `input` and returns the next event (nil = need more bytes) and how
  /// many bytes it consumed.
  public mutating func next(_ input: UnsafeRawBufferPointer) throws(MultipartError) -> (
    event: Event?, consumed: Int
  ) {
    do throws(MultipartError) {
      let result = try step(input)
      totalBytes += result.consumed
      return result
    } catch {
      state = .failed(error)
      throw error
    }
  }

  /// Signals that the body has ended; throws unless the close delimiter was seen.
  public mutating func finish() throws(MultipartError) {
    switch state {
    case .epilogue: return
    case .failed(let error): throw error
    default:
      state = .failed(MultipartError(.missingFinalBoundary))
      throw MultipartError(.missingFinalBoundary)
    }
  }

  private mutating func step(_ input: UnsafeRawBufferPointer) throws(MultipartError) -> (
    event: Event?, consumed: Int
  ) {
    // Every advance is checked against the total limit where it happens, so that the outcome
    // does not depend on how the bytes were split.
    func counted(_ consumed: Int) throws(MultipartError) -> Int {
      if consumed > limits.maxTotalBytes - totalBytes { throw MultipartError(.bodyTooLarge) }
      return consumed
    }
    var offset = 0
    while true {
      let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
      switch state {
      case .failed(let error):
        throw error

      case .preamble(let atStart):
        if atStart {
          // The first delimiter may open the body without its CRLF.
          let dashBoundary = delimiter.count - 2
          let n = min(rest.count, dashBoundary)
          if !matchesDelimiter(rest, at: 0, from: 2, count: n) {
            state = .preamble(atStart: false)
            continue
          }
          if n < dashBoundary { return (nil, offset) }
          offset = try counted(offset + dashBoundary)
          state = .afterBoundary(padding: 0)
          continue
        }
        switch findDelimiter(rest) {
        case .found(let at):
          offset = try counted(offset + at + delimiter.count)
          state = .afterBoundary(padding: 0)
        case .partial(let at):
          return (nil, try counted(offset + at))
        }

      case .afterBoundary(let padding):
        guard rest.count >= 2 else {
          if rest.count == 1, rest[0] != ASCII.hyphen, rest[0] != ASCII.cr, !ASCII.isWhitespace(rest[0]) {
            throw MultipartError(.invalidDelimiter)
          }
          return (nil, try counted(offset))
        }
        if padding == 0, rest[0] == ASCII.hyphen, rest[1] == ASCII.hyphen {
          state = .epilogue
          return (.end, try counted(offset + 2))
        }
        if ASCII.isWhitespace(rest[0]) {
          guard padding < Self.maxTransportPadding else { throw MultipartError(.invalidDelimiter) }
          offset = try counted(offset + 1)
          state = .afterBoundary(padding: padding + 1)
          continue
        }
        guard rest[0] == ASCII.cr, rest[1] == ASCII.lf else { throw MultipartError(.invalidDelimiter) }
        offset = try counted(offset + 2)
        parts += 1
        if parts > limits.maxParts { throw MultipartError(.tooManyParts) }
        state = .partHeaders

      case .partHeaders:
        guard let end = try scanPartHeaders(rest) else { return (nil, offset) }
        let head = try MultipartPartHead(parsing: rest, fields: 0..<end - 2)
        scanPosition = 0
        headerLines = 0
        partBytes = 0
        state = .partBody
        return (.partBegin(head), try counted(offset + end))

      case .partBody:
        let bodyEnd: Int
        switch findDelimiter(rest) {
        case .found(0):
          offset += delimiter.count
          state = .afterBoundary(padding: 0)
          return (.partEnd, try counted(offset))
        case .found(let at): bodyEnd = at
        case .partial(let at): bodyEnd = at
        }
        if bodyEnd == 0 { return (nil, offset) }
        partBytes += bodyEnd
        if partBytes > limits.maxPartBytes { throw MultipartError(.partTooLarge) }
        return (.partBody(offset..<offset + bodyEnd), try counted(offset + bodyEnd))

      case .epilogue:
        return (nil, try counted(input.count))
      }
    }
  }

  enum Search {
    /// The whole delimiter starts here.
    case found(Int)
    /// No delimiter; the bytes from here on could start one (the input count if none could).
    case partial(Int)
  }

  /// Finds `CRLF--boundary` in `input`, or the earliest tail that could begin it.
  func findDelimiter(_ input: UnsafeRawBufferPointer) -> Search {
    var i = 0
    while let cr = input.firstIndex(of: ASCII.cr, from: i) {
      let available = min(delimiter.count, input.count - cr)
      if matchesDelimiter(input, at: cr, from: 0, count: available) {
        return available == delimiter.count ? .found(cr) : .partial(cr)
      }
      i = cr + 1
    }
    return .partial(input.count)
  }

  /// Whether `count` bytes of `input` at `at` equal the delimiter's bytes from `from`.
  @inline(__always)
  func matchesDelimiter(_ input: UnsafeRawBufferPointer, at: Int, from: Int, count: Int) -> Bool {
    delimiter.withUnsafeBytes { d in
      for k in 0..<count where input[at + k] != d[from + k] { return false }
      return true
    }
  }

  /// The end of a part's header block (after its empty line), or nil when more bytes are needed.
  private mutating func scanPartHeaders(_ input: UnsafeRawBufferPointer) throws(MultipartError) -> Int? {
    var position = scanPosition
    while let lf = input.firstIndex(of: ASCII.lf, from: position) {
      // The incomplete-tail test first, so that the outcome does not depend on the split.
      if lf > limits.maxPartHeaderBytes + 2 { throw MultipartError(.partHeaderTooLarge) }
      guard lf > position, input[lf - 1] == ASCII.cr else { throw MultipartError(.invalidPartHeader) }
      if lf - 1 == position { return lf + 1 }
      headerLines += 1
      if headerLines > limits.maxPartHeaderFields { throw MultipartError(.tooManyPartHeaderFields) }
      if lf + 1 > limits.maxPartHeaderBytes { throw MultipartError(.partHeaderTooLarge) }
      position = lf + 1
    }
    if input.count > limits.maxPartHeaderBytes + 2 { throw MultipartError(.partHeaderTooLarge) }
    scanPosition = position
    return nil
  }

  /// RFC 2046 §5.1.1: 1 to 70 of DIGIT ALPHA `'()+_,-./:=?` and space, not ending in space.
  static func isValidBoundary(_ bytes: [UInt8]) -> Bool {
    guard (1...70).contains(bytes.count), bytes.last != ASCII.space else { return false }
    return bytes.allSatisfy { b in
      switch b {
      case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
      case 0x27, 0x28, 0x29, 0x2B, 0x5F, 0x2C, 0x2D, 0x2E, 0x2F, 0x3A, 0x3D, 0x3F, 0x20: true
      default: false
      }
    }
  }
}
