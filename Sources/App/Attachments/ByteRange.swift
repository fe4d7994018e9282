/// A single `Range: bytes=…` request (RFC 9110 §14.2) resolved against a size.
enum ByteRange: Equatable {
  /// Serve the whole representation (no header, another unit, several ranges, or unparsable).
  case whole
  /// Serve `lower...upper` (inclusive) with 206.
  case partial(lower: Int, upper: Int)
  /// No byte of the range exists (416).
  case unsatisfiable

  /// Resolves `header` for a representation of `size` bytes. Several ranges are answered with
  /// the whole image (a 200 is always allowed), which keeps multipart/byteranges out.
  static func resolve(_ header: String?, size: Int) -> ByteRange {
    guard let header else { return .whole }
    let trimmed = header.trimmingASCIIWhitespace()
    guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
    let spec = trimmed.dropFirst(6)
    guard !spec.contains(",") else { return .whole }
    let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
    guard parts.count == 2 else { return .whole }
    let first = parts[0].trimmingASCIIWhitespace()
    let last = parts[1].trimmingASCIIWhitespace()
    if first.isEmpty {
      // bytes=-n: the last n bytes.
      guard let count = Self.number(last) else { return .whole }
      guard count > 0, size > 0 else { return .unsatisfiable }
      return .partial(lower: max(0, size - count), upper: size - 1)
    }
    guard let lower = Self.number(first) else { return .whole }
    guard lower < size else { return .unsatisfiable }
    if last.isEmpty { return .partial(lower: lower, upper: size - 1) }
    guard let upper = Self.number(last), upper >= lower else { return .whole }
    return .partial(lower: lower, upper: min(upper, size - 1))
  }

  private static func number(_ text: some StringProtocol) -> Int? {
    guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
      return nil
    }
    return Int(text)
  }
}
