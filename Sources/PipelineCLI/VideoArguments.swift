/// The command line `attachd stills` and `attachd rendition` share: two paths, `--no-sandbox`,
/// `--max-edge N` within `maxEdges`, and (stills only) `--frames MIN-MAX`.
struct VideoArguments {
  var positional: [String] = []
  var sandboxed = true
  var maxEdge: Int?
  var frames: (minimum: Int, maximum: Int)?

  /// The arguments, or the line that says what is wrong with them.
  static func parse(_ arguments: [String], maxEdges: ClosedRange<Int>, takesFrames: Bool) -> Result<
    Self, Wrong
  > {
    var parsed = VideoArguments()
    var i = 0
    while i < arguments.count {
      let arg = arguments[i]
      let value = i + 1 < arguments.count ? arguments[i + 1] : nil
      switch arg {
      case "--no-sandbox":
        parsed.sandboxed = false
        i += 1
      case "--max-edge":
        guard let edge = value.flatMap({ Int($0) }), maxEdges.contains(edge) else {
          return .failure(
            Wrong("--max-edge needs a number from \(maxEdges.lowerBound) to \(maxEdges.upperBound)"))
        }
        parsed.maxEdge = edge
        i += 2
      case "--frames" where takesFrames:
        let bounds = value?.split(separator: "-").compactMap { Int($0) } ?? []
        guard bounds.count == 2, 1 <= bounds[0], bounds[0] <= bounds[1], bounds[1] <= 64 else {
          return .failure(Wrong("--frames needs MIN-MAX, 1 ≤ MIN ≤ MAX ≤ 64"))
        }
        parsed.frames = (bounds[0], bounds[1])
        i += 2
      default:
        guard !arg.hasPrefix("--") else { return .failure(Wrong("unknown option \(arg)")) }
        parsed.positional.append(arg)
        i += 1
      }
    }
    return parsed.positional.count == 2 ? .success(parsed) : .failure(Wrong(nil))
  }

  /// The arguments, or nil once the reason they are wrong went to `stderr`.
  static func parse(
    _ arguments: [String], usage: String, maxEdges: ClosedRange<Int>, takesFrames: Bool,
    stderr: (String) -> Void
  ) -> Self? {
    switch parse(arguments, maxEdges: maxEdges, takesFrames: takesFrames) {
    case .success(let parsed): return parsed
    case .failure(let wrong):
      stderr(wrong.text(usage: usage))
      return nil
    }
  }

  /// What is wrong with a command line (nil: say only the usage).
  struct Wrong: Error {
    var message: String?
    init(_ message: String?) { self.message = message }

    /// The stderr text for a command whose usage line is `usage`.
    func text(usage: String) -> String {
      message.map { "attachd: usage: \($0)\n\(usage)" } ?? "attachd: \(usage)"
    }
  }
}
