/// The text form in which both indexes keep a stored response's headers: one `Name: value` line each.
enum StoredHeaders {
  // Header names and values never hold CR or LF (HTTP forbids it), so lines are unambiguous.
  static func encode(_ headers: [String: String]) -> String {
    headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\n" }.joined()
  }

  static func decode(_ text: String) -> [String: String] {
    var headers: [String: String] = [:]
    for line in text.split(separator: "\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      let value = line[line.index(after: colon)...].drop { $0 == " " }
      headers[String(line[..<colon])] = String(value)
    }
    return headers
  }
}
