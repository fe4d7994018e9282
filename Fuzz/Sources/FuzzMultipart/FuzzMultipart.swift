import FuzzSupport
import HTTP

/// What one feed of the input produced: body ranges are absolute positions in the input, merged
/// when contiguous, so that every way of splitting the input must give the same list.
private enum Seen: Equatable {
  case begin(MultipartPartHead)
  case body(Range<Int>)
  case partEnd
  case end
  case error(MultipartError.Kind)
}

/// Feeds `input` in pieces: the first ends at `firstCut`, each next one is `step` bytes longer
/// (with `step` 0, 1 to 16 bytes longer, chosen by the input's own bytes), re-presenting the unconsumed tail
/// with each piece, then calls `finish()`. Traps when a contract is broken.
private func feed(_ input: UnsafeRawBufferPointer, firstCut: Int, step: Int, limits: MultipartParser.Limits)
  -> [Seen]
{
  var parser = try! MultipartParser(boundary: "b0und", limits: limits)
  var seen: [Seen] = []
  var start = 0
  var events = 0
  var available = min(max(firstCut, 0), input.count)
  while true {
    while true {
      let window = UnsafeRawBufferPointer(rebasing: input[start..<max(start, available)])
      let event: MultipartParser.Event?
      let consumed: Int
      do {
        (event, consumed) = try parser.next(window)
      } catch {
        // How much of an over-long part was delivered before the refusal depends on the reads.
        if case .body = seen.last { seen.removeLast() }
        seen.append(.error(error.kind))
        return seen
      }
      precondition(consumed >= 0 && consumed <= window.count, "consumed out of bounds")
      events += 1
      precondition(events <= 4 * input.count + 64, "no progress")
      switch event {
      case .partBegin(let head): seen.append(.begin(head))
      case .partBody(let range):
        precondition(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= consumed, "body range")
        let absolute = (start + range.lowerBound)..<(start + range.upperBound)
        if case .body(let previous) = seen.last, previous.upperBound == absolute.lowerBound {
          seen[seen.count - 1] = .body(previous.lowerBound..<absolute.upperBound)
        } else {
          seen.append(.body(absolute))
        }
      case .partEnd: seen.append(.partEnd)
      case .end: seen.append(.end)
      case nil: break
      }
      start += consumed
      if event == nil { break }
    }
    if available == input.count { break }
    available = min(input.count, available + (step > 0 ? step : 1 + Int(input[available] & 15)))
  }
  precondition(start == input.count || !parser.isComplete, "epilogue not consumed")
  do { try parser.finish() } catch { seen.append(.error(error.kind)) }
  return seen
}

// One size limit finite per configuration: with two, which one trips first depends on the reads.
private let configurations: [MultipartParser.Limits] = [
  .init(),
  .init(maxPartHeaderBytes: 40, maxPartHeaderFields: 2, maxPartBytes: 16, maxParts: 3),
  .init(maxTotalBytes: 64),
]

/// One input: must never crash, hang or leak, whatever the bytes; every split gives the same events.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  // Every split feed costs calls per byte; 512 bytes hold every framing shape with the tight
  // limits below, and keep the run fast enough for ten million inputs.
  let input = UnsafeRawBufferPointer(start: data, count: min(size, 512))
  let n = input.count
  let steered = n == 0 ? 0 : Int(input[n - 1]) * 31 % (n + 1)
  // One configuration per input (by its length, which the fuzzer mutates freely) keeps it cheap.
  do {
    let limits = configurations[n % configurations.count]
    let whole = feed(input, firstCut: n, step: n, limits: limits)
    // The varying pieces start with a cut the input steers; a plain two-piece feed would add little.
    precondition(
      feed(input, firstCut: steered, step: 0, limits: limits) == whole, "varying-piece feed differs")
    // Byte by byte costs a call per byte: kept for short inputs, where most smuggling shapes fit.
    if n <= 32 {
      precondition(feed(input, firstCut: 1, step: 1, limits: limits) == whole, "byte-by-byte feed differs")
    }
  }
  // The Content-Type parser sees the same bytes.
  _ = MultipartParser.boundary(fromContentType: String(decoding: input, as: UTF8.self))
  return 0
}

@_cdecl("FuzzMultipart_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  runLibFuzzer(argc, argv, testOneInput)
}
