/// A plain API key and the tenant it belongs to, as given by `ATTACHD_API_KEYS`.
///
/// Hashed keys with scopes live in `auth.keys`; this is the container-friendly form.
public struct APIKey: Sendable, Equatable {
  public var tenant: String
  public var key: String

  public init(tenant: String, key: String) {
    self.tenant = tenant
    self.key = key
  }

  /// Shortest key accepted: shorter ones are guessable.
  public static let minimumKeyLength = 16
  /// Longest tenant name accepted.
  public static let maximumTenantLength = 64

  /// Parses comma-separated `tenant:key` pairs. Whitespace around entries is ignored, empty
  /// entries are skipped. Error messages name the entry by position and never echo a key.
  public static func parseList(_ text: String) throws(ConfigurationError) -> [APIKey] {
    var keys: [APIKey] = []
    for (index, rawEntry) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
      let entry = rawEntry.trimmingASCIIWhitespace()
      if entry.isEmpty { continue }
      keys.append(try parse(entry, position: index + 1))
    }
    return keys
  }

  /// Parses one `tenant:key` pair; `position` (1-based) is used in messages.
  public static func parse(_ entry: Substring, position: Int) throws(ConfigurationError) -> APIKey {
    guard let colon = entry.firstIndex(of: ":") else {
      throw ConfigurationError("entry \(position) is not tenant:key (no ':')")
    }
    let tenant = String(entry[..<colon])
    let key = String(entry[entry.index(after: colon)...])
    let result = APIKey(tenant: tenant, key: key)
    try result.validate(position: position)
    return result
  }

  /// Checks the tenant name and the key's length and characters.
  public func validate(position: Int) throws(ConfigurationError) {
    guard !tenant.isEmpty else { throw ConfigurationError("entry \(position) has an empty tenant") }
    guard tenant.utf8.count <= Self.maximumTenantLength,
      tenant.utf8.allSatisfy({ $0.isTenantCharacter })
    else {
      throw ConfigurationError(
        "entry \(position): tenant must be 1…\(Self.maximumTenantLength) of A-Z a-z 0-9 - _ .")
    }
    guard !key.isEmpty else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)) has an empty key")
    }
    guard key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") }) else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)): key must be printable ASCII, no spaces")
    }
    // Two dots make a credential an upload token (`TokenVerifier.isToken`): such a key could
    // never be presented as a key.
    guard !TokenVerifier.isToken(key) else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)): a key may not contain exactly two dots")
    }
    guard key.utf8.count >= Self.minimumKeyLength else {
      throw ConfigurationError(
        "entry \(position) (tenant \(tenant)): key is shorter than \(Self.minimumKeyLength) characters")
    }
  }
}

extension UInt8 {
  fileprivate var isTenantCharacter: Bool {
    switch self {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
      true
    default: false
    }
  }
}
