import HTTP
import Testing

/// What a caller sees from the multipart parser, body bytes of a part gathered.
enum PartSeen: Equatable, CustomStringConvertible {
  case begin(MultipartPartHead)
  case body([UInt8])
  case partEnd
  case end
  case error(MultipartError.Kind)

  var description: String {
    switch self {
    case .begin(let h): "begin(name: \(h.name ?? "-"), filename: \(h.filename ?? "-"))"
    case .body(let b): "body(\(String(decoding: b, as: UTF8.self).debugDescription))"
    case .partEnd: "partEnd"
    case .end: "end"
    case .error(let k): "error(\(k))"
    }
  }
}

func next(_ parser: inout MultipartParser, _ buffer: [UInt8]) throws(MultipartError) -> (
  event: MultipartParser.Event?, consumed: Int
) {
  do {
    return try buffer.withUnsafeBytes { raw in try parser.next(raw) }
  } catch let error as MultipartError {
    throw error
  } catch {
    fatalError("untyped error \(error)")
  }
}

/// Feeds `pieces` through one growing buffer, then calls `finish()`.
func feedMultipart(
  _ pieces: [ArraySlice<UInt8>], boundary: String, limits: MultipartParser.Limits = .init()
) -> [PartSeen] {
  var parser: MultipartParser
  do { parser = try MultipartParser(boundary: boundary, limits: limits) } catch {
    return [.error(error.kind)]
  }
  var buffer: [UInt8] = []
  var seen: [PartSeen] = []
  for piece in pieces {
    buffer += piece
    while true {
      let result: (event: MultipartParser.Event?, consumed: Int)
      do { result = try next(&parser, buffer) } catch {
        // How much of an over-long part was delivered before the refusal depends on the reads.
        if case .body = seen.last { seen.removeLast() }
        seen.append(.error(error.kind))
        return seen
      }
      #expect(result.consumed >= 0 && result.consumed <= buffer.count)
      switch result.event {
      case .partBegin(let head): seen.append(.begin(head))
      case .partBody(let range):
        #expect(range.lowerBound >= 0 && range.upperBound <= result.consumed && !range.isEmpty)
        if case .body(let previous) = seen.last {
          seen[seen.count - 1] = .body(previous + buffer[range])
        } else {
          seen.append(.body(Array(buffer[range])))
        }
      case .partEnd: seen.append(.partEnd)
      case .end: seen.append(.end)
      case nil: break
      }
      buffer.removeFirst(result.consumed)
      if result.event == nil { break }
    }
  }
  do { try parser.finish() } catch { seen.append(.error(error.kind)) }
  return seen
}

/// Parses `body` whole, in two pieces at every index, and byte by byte; expects the same events.
func parseMultipartAtEverySplit(
  _ body: [UInt8], boundary: String, limits: MultipartParser.Limits = .init(), everySplit: Bool = true,
  sourceLocation: SourceLocation = #_sourceLocation
) -> [PartSeen] {
  let whole = feedMultipart([body[...]], boundary: boundary, limits: limits)
  let splits = everySplit ? Array(0...body.count) : [0, body.count / 2, body.count]
  for i in splits {
    let split = feedMultipart([body[..<i], body[i...]], boundary: boundary, limits: limits)
    if split != whole {
      Issue.record("split at \(i) gives \(split), whole gives \(whole)", sourceLocation: sourceLocation)
      break
    }
  }
  let byteByByte = feedMultipart(body.indices.map { body[$0...$0] }, boundary: boundary, limits: limits)
  #expect(byteByByte == whole, "byte by byte", sourceLocation: sourceLocation)
  return whole
}

func parseMultipartAtEverySplit(
  _ body: String, boundary: String = "XyZ", limits: MultipartParser.Limits = .init(),
  sourceLocation: SourceLocation = #_sourceLocation
) -> [PartSeen] {
  parseMultipartAtEverySplit(
    Array(body.utf8), boundary: boundary, limits: limits, sourceLocation: sourceLocation)
}
