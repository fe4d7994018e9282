extension StringProtocol {
  /// The string without leading and trailing spaces, tabs and line breaks.
  public func trimmingASCIIWhitespace() -> Substring {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
    let s = Substring(self)
    guard let first = s.firstIndex(where: { !isSpace($0) }) else { return s[s.endIndex...] }
    let last = s.lastIndex(where: { !isSpace($0) })!
    return s[first...last]
  }
}
