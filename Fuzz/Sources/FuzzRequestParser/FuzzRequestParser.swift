import FuzzSupport
import HTTP

/// What one feed of the input produced: body ranges are absolute positions in the input, merged
/// when contiguous, so that every way of splitting the input must give the same list.
private enum Seen: Equatable {
  case head(HTTPRequestHead)
  case body(Range<Int>)
  case end(HTTPHeaders)
  case error(HTTPParserError.Kind)
}

/// Feeds `input` in pieces: the first ends at `firstCut`, each next one is `step` bytes longer
/// (with `step` 0, 1 to 16 bytes longer, chosen by the input's own bytes), the way a server does: the
/// unconsumed tail is presented again with the next piece. Traps when a contract is broken.
private func feed(_ input: UnsafeRawBufferPointer, firstCut: Int, step: Int, limits: HTTPRequestParser.Limits)
  -> [Seen]
{
  var parser = HTTPRequestParser(limits: limits)
  var seen: [Seen] = []
  var start = 0
  var events = 0
  var available = min(max(firstCut, 0), input.count)
  while true {
    while true {
      let window = UnsafeRawBufferPointer(rebasing: input[start..<max(start, available)])
      let event: HTTPRequestParser.Event?
      let consumed: Int
      do {
        (event, consumed) = try parser.next(window)
      } catch {
        precondition(HTTPParserError(error.kind).status == error.status)
        seen.append(.error(error.kind))
        return seen
      }
      precondition(consumed >= 0 && consumed <= window.count, "consumed out of bounds")
      events += 1
      precondition(events <= 4 * input.count + 64, "no progress")
      switch event {
      case .head(let head): seen.append(.head(head))
      case .body(let range):
        precondition(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= consumed, "body range")
        let absolute = (start + range.lowerBound)..<(start + range.upperBound)
        if case .body(let previous) = seen.last, previous.upperBound == absolute.lowerBound {
          seen[seen.count - 1] = .body(previous.lowerBound..<absolute.upperBound)
        } else {
          seen.append(.body(absolute))
        }
      case .end(let trailers): seen.append(.end(trailers))
      case nil: break
      }
      start += consumed
      if event == nil { break }
    }
    if available == input.count { break }
    available = min(input.count, available + (step > 0 ? step : 1 + Int(input[available] & 15)))
  }
  return seen
}

private let tight = HTTPRequestParser.Limits(
  maxRequestLineBytes: 48, maxHeaderBytes: 96, maxHeaderFields: 4, maxChunkLineBytes: 12, maxTrailerBytes: 40)

/// One input: must never crash, hang or leak, whatever the bytes; every split gives the same events.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  // Every split feed costs calls per byte; 512 bytes hold every framing shape with the tight
  // limits below, and keep the run fast enough for ten million inputs.
  let input = UnsafeRawBufferPointer(start: data, count: min(size, 512))
  let n = input.count
  // A cut derived from the bytes, so that the fuzzer can steer where the split falls.
  let steered = n == 0 ? 0 : Int(input[n - 1]) * 31 % (n + 1)
  // One limit set per input (by its length, which the fuzzer mutates freely) halves the cost.
  do {
    let limits = n % 2 == 0 ? HTTPRequestParser.Limits() : tight
    let whole = feed(input, firstCut: n, step: n, limits: limits)
    precondition(feed(input, firstCut: steered, step: n, limits: limits) == whole, "two-piece feed differs")
    precondition(feed(input, firstCut: 1, step: 0, limits: limits) == whole, "varying-piece feed differs")
    // Byte by byte costs a call per byte: kept for short inputs, where most smuggling shapes fit.
    if n <= 64 {
      precondition(feed(input, firstCut: 1, step: 1, limits: limits) == whole, "byte-by-byte feed differs")
    }
  }
  return 0
}

@_cdecl("FuzzRequestParser_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
