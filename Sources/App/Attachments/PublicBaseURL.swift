/// `server.publicBaseURL`: the scheme, host and path prefix clients reach attachd at, put in
/// front of every link attachd hands out (`url`, `signed_url`, `Location`) so that the model
/// backend can pass a link straight to a provider. Empty: links stay relative paths.
enum PublicBaseURL {
  /// `https://host[:port][/prefix]` without a trailing slash, or "" for none.
  ///
  /// Refused: other schemes, no host, a query, a fragment, user information (a password in a
  /// link would be handed to every client) and characters a URL may not hold as they are.
  static func normalised(_ text: String) throws(ConfigurationError) -> String {
    var value = Substring(text.trimmingASCIIWhitespace())
    if value.isEmpty { return "" }
    while value.hasSuffix("/") { value = value.dropLast() }
    let lower = value.lowercased()
    guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
      throw ConfigurationError("must start with https:// or http://, not \"\(text)\"")
    }
    let rest = value.drop { $0 != "/" }.dropFirst(2)
    let host = rest.prefix { $0 != "/" }
    let forbidden: Set<UInt8> = [
      UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "@"), UInt8(ascii: "\\"), UInt8(ascii: "\""),
      UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "}"),
      UInt8(ascii: "|"), UInt8(ascii: "^"),
    ]
    guard !host.isEmpty, !host.hasPrefix(":"),
      value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !forbidden.contains($0) })
    else {
      throw ConfigurationError(
        "must be scheme://host[:port][/prefix] with no user, query or fragment, not \"\(text)\"")
    }
    return String(value)
  }
}
