/// Maps a method and a path to a route: exact paths by lookup, `{name}` segments by scan.
///
/// `HEAD` is accepted wherever `GET` is. A path that exists under other methods is a 405
/// with the methods to put in `Allow`; any other path is a 404.
public struct Router<Route: Sendable>: Sendable {
  /// The outcome of matching one request.
  public enum Match {
    case found(Route, parameters: [String: String])
    case methodNotAllowed(allow: [String])
    case notFound
  }

  private struct Entry: Sendable {
    var method: String
    var segments: [Substring]
    var route: Route
  }

  // Exact paths (no parameters) keyed by path; the common case costs one hash lookup.
  private var exact: [String: [Entry]] = [:]
  private var patterns: [Entry] = []

  public init() {}

  /// Adds a route. `pattern` is an absolute path whose segments may be `{name}`.
  public mutating func add(_ method: String, _ pattern: String, _ route: Route) {
    precondition(pattern.hasPrefix("/"), "route patterns start with /")
    let segments = pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
    let entry = Entry(method: method, segments: Array(segments), route: route)
    if segments.contains(where: { $0.hasPrefix("{") }) {
      patterns.append(entry)
    } else {
      exact[pattern, default: []].append(entry)
    }
  }

  /// Finds the route for `method` and `path` (the target without its query).
  public func match(method: String, path: Substring) -> Match {
    var candidates: [(Entry, [String: String])] = []
    if let entries = exact[String(path)] {
      candidates = entries.map { ($0, [:]) }
    } else if !patterns.isEmpty {
      let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
      for entry in patterns {
        if let parameters = Self.bind(entry.segments, to: segments) { candidates.append((entry, parameters)) }
      }
    }
    if candidates.isEmpty { return .notFound }
    let effective = method == "HEAD" ? "GET" : method
    if let (entry, parameters) = candidates.first(where: { $0.0.method == effective }) {
      return .found(entry.route, parameters: parameters)
    }
    var allow: [String] = []
    for (entry, _) in candidates where !allow.contains(entry.method) {
      allow.append(entry.method)
      if entry.method == "GET" { allow.append("HEAD") }
    }
    return .methodNotAllowed(allow: allow)
  }

  private static func bind(_ pattern: [Substring], to path: ArraySlice<Substring>) -> [String: String]? {
    guard pattern.count == path.count else { return nil }
    var parameters: [String: String] = [:]
    for (want, have) in zip(pattern, path) {
      if want.hasPrefix("{") && want.hasSuffix("}") {
        guard !have.isEmpty else { return nil }
        parameters[String(want.dropFirst().dropLast())] = String(have)
      } else if want != have {
        return nil
      }
    }
    return parameters
  }
}
