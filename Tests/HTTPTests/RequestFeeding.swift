import HTTP
import Testing

/// What a caller sees from the parser, with body bytes gathered so that any split of the input
/// gives the same list.
enum Seen: Equatable, CustomStringConvertible {
  case head(HTTPRequestHead)
  case body([UInt8])
  case end(trailers: HTTPHeaders)
  case error(HTTPParserError.Kind)

  var description: String {
    switch self {
    case .head(let h): "head(\(h.method) \(h.target) \(h.version) \(h.framing) keepAlive=\(h.keepAlive))"
    case .body(let b): "body(\(String(decoding: b, as: UTF8.self).debugDescription))"
    case .end(let t): "end(\(t.fields.map { "\($0.name)=\($0.value)" }))"
    case .error(let k): "error(\(k))"
    }
  }
}

/// One call of `next` on the bytes of `buffer`.
func next(_ parser: inout HTTPRequestParser, _ buffer: [UInt8]) throws(HTTPParserError) -> (
  event: HTTPRequestParser.Event?, consumed: Int
) {
  do {
    return try buffer.withUnsafeBytes { raw in try parser.next(raw) }
  } catch let error as HTTPParserError {
    throw error
  } catch {
    fatalError("untyped error \(error)")
  }
}

/// Feeds `pieces` the way a server does: one growing buffer, `next` until it returns nil.
func feedRequest(_ pieces: [ArraySlice<UInt8>], limits: HTTPRequestParser.Limits = .init()) -> [Seen] {
  var parser = HTTPRequestParser(limits: limits)
  var buffer: [UInt8] = []
  var seen: [Seen] = []
  for piece in pieces {
    buffer += piece
    while true {
      let result: (event: HTTPRequestParser.Event?, consumed: Int)
      do {
        result = try next(&parser, buffer)
      } catch {
        seen.append(.error(error.kind))
        return seen
      }
      #expect(result.consumed >= 0 && result.consumed <= buffer.count)
      switch result.event {
      case .head(let head): seen.append(.head(head))
      case .body(let range):
        #expect(range.lowerBound >= 0 && range.upperBound <= result.consumed && !range.isEmpty)
        if case .body(let previous) = seen.last {
          seen[seen.count - 1] = .body(previous + buffer[range])
        } else {
          seen.append(.body(Array(buffer[range])))
        }
      case .end(let trailers): seen.append(.end(trailers: trailers))
      case nil: break
      }
      buffer.removeFirst(result.consumed)
      if result.event == nil { break }
    }
  }
  return seen
}

/// Parses `message` whole, split in two at every index, and byte by byte; expects the same
/// events each time and returns them.
func parseAtEverySplit(
  _ message: String, limits: HTTPRequestParser.Limits = .init(), everySplit: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation
) -> [Seen] {
  parseAtEverySplit(
    Array(message.utf8), limits: limits, everySplit: everySplit, sourceLocation: sourceLocation)
}

func parseAtEverySplit(
  _ bytes: [UInt8], limits: HTTPRequestParser.Limits = .init(), everySplit: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation
) -> [Seen] {
  let whole = feedRequest([bytes[...]], limits: limits)
  let splits = everySplit ? Array(0...bytes.count) : [0, bytes.count / 2, bytes.count]
  for i in splits {
    let split = feedRequest([bytes[..<i], bytes[i...]], limits: limits)
    if split != whole {
      Issue.record("split at \(i) gives \(split), whole gives \(whole)", sourceLocation: sourceLocation)
      break
    }
  }
  let byteByByte = feedRequest(bytes.indices.map { bytes[$0...$0] }, limits: limits)
  #expect(byteByByte == whole, "byte by byte", sourceLocation: sourceLocation)
  return whole
}

/// The single error kind a message ends with, at every split.
func errorKind(
  _ message: String, limits: HTTPRequestParser.Limits = .init(),
  sourceLocation: SourceLocation = #_sourceLocation
) -> HTTPParserError.Kind? {
  guard
    case .error(let kind) = parseAtEverySplit(message, limits: limits, sourceLocation: sourceLocation).last
  else { return nil }
  return kind
}
