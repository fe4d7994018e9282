import Crypto
import Foundation

/// One API key as the configuration file holds it: its tenant, its scopes and the SHA-256 of
/// the key, never the key itself.
///
/// JSON shape (one element of the `auth.keys` array):
/// `{"tenant": "acme", "scopes": ["upload", "read"], "key_sha256": "<64 lower-case hex>"}`.
/// Members starting with `_` are comments (e.g. `"_note": "phone app, 2026-11"`).
/// A plain SHA-256 is the right hash here: keys are 192 random bits, so there is nothing for a
/// slow password hash to protect, and a fast hash keeps every request cheap.
public struct HashedKey: Sendable, Equatable {
  /// The tenant the key belongs to.
  public var tenant: String
  /// What the key may do.
  public var scopes: Set<Scope>
  /// SHA-256 of the key's UTF-8 bytes (32 bytes).
  public var keySHA256: [UInt8]

  public init(tenant: String, scopes: Set<Scope>, keySHA256: [UInt8]) {
    self.tenant = tenant
    self.scopes = scopes
    self.keySHA256 = keySHA256
  }

  /// The entry for a plain key: hashes it.
  public init(tenant: String, scopes: Set<Scope>, key: String) {
    self.init(tenant: tenant, scopes: scopes, keySHA256: SHA256.hash(key))
  }

  /// Number of hex digits of the hash that make a key id.
  public static let keyIDLength = 8

  /// The key's id for logs and rate limiting: `k_` + the first 8 hex digits of its hash.
  ///
  /// 32 bits of a hash of a 192-bit random key say nothing useful about the key.
  public var keyID: String { Self.keyID(ofSHA256: keySHA256) }

  /// The key id for a key hash.
  public static func keyID(ofSHA256 digest: [UInt8]) -> String {
    "k_" + String(Hex.encode(digest).prefix(keyIDLength))
  }

  /// The entry as one JSON line, members in a fixed order, ready for `auth.keys`.
  public var jsonLine: String {
    var out: [UInt8] = Array(#"{"tenant":"#.utf8)
    JSONText.appendQuoted(tenant, to: &out)
    out.append(contentsOf: #","scopes":["#.utf8)
    for (index, scope) in scopes.sorted().enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      JSONText.appendQuoted(scope.rawValue, to: &out)
    }
    out.append(contentsOf: #"],"key_sha256":"#.utf8)
    JSONText.appendQuoted(Hex.encode(keySHA256), to: &out)
    out.append(UInt8(ascii: "}"))
    return String(decoding: out, as: UTF8.self)
  }

  /// Checks tenant, scopes and hash length; `position` (1-based) is used in messages.
  public func validate(position: Int) throws(ConfigurationError) {
    guard Self.isValidTenant(tenant) else {
      throw ConfigurationError(
        "entry \(position): tenant must be 1…\(APIKey.maximumTenantLength) of A-Z a-z 0-9 - _ .")
    }
    guard !scopes.isEmpty else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)) has no scopes")
    }
    guard keySHA256.count == SHA256.byteCount else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)): key_sha256 must be 64 hex digits")
    }
  }

  /// Same rule as `APIKey`: 1…64 of `A-Z a-z 0-9 - _ .`.
  static func isValidTenant(_ tenant: String) -> Bool {
    !tenant.isEmpty && tenant.utf8.count <= APIKey.maximumTenantLength
      && tenant.utf8.allSatisfy { byte in
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
          UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
          true
        default: false
        }
      }
  }
}

extension HashedKey {
  /// Parses the `auth.keys` value: a JSON array of entries, or (from `ATTACHD_AUTH_KEYS`) the
  /// same array as JSON text.
  static func parseList(_ value: ConfigurationValue) throws(ConfigurationError) -> [HashedKey] {
    switch value {
    case .json(let json): return try parseList(json)
    case .text(let text): return try parseList(jsonText: text)
    }
  }

  /// Parses a JSON array of entries given as text; empty text is an empty list.
  public static func parseList(jsonText text: String) throws(ConfigurationError) -> [HashedKey] {
    if text.trimmingASCIIWhitespace().isEmpty { return [] }
    let json: JSONValue
    do {
      json = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    } catch {
      throw ConfigurationError("not valid JSON (expected an array of key entries)")
    }
    return try parseList(json)
  }

  /// Parses a JSON array of entries.
  static func parseList(_ json: JSONValue) throws(ConfigurationError) -> [HashedKey] {
    guard case .array(let elements) = json else {
      throw ConfigurationError("expected an array of {tenant, scopes, key_sha256} objects")
    }
    var keys: [HashedKey] = []
    for (index, element) in elements.enumerated() {
      keys.append(try parse(element, position: index + 1))
    }
    return keys
  }

  /// Parses one `{tenant, scopes, key_sha256}` object; unknown members are errors.
  static func parse(_ json: JSONValue, position: Int) throws(ConfigurationError) -> HashedKey {
    guard case .object(let members) = json else {
      throw ConfigurationError("entry \(position) must be an object")
    }
    for name in members.keys.sorted() where !name.hasPrefix("_") {
      guard ["tenant", "scopes", "key_sha256"].contains(name) else {
        throw ConfigurationError("entry \(position): unknown member \(name)")
      }
    }
    guard case .string(let tenant) = members["tenant"] else {
      throw ConfigurationError("entry \(position): tenant must be a string")
    }
    guard case .array(let scopeValues) = members["scopes"] else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)): scopes must be an array of strings")
    }
    var names: [String] = []
    for value in scopeValues {
      guard case .string(let name) = value, !name.contains(","), !name.contains("+") else {
        throw ConfigurationError("entry \(position) (tenant \(tenant)): scopes must be an array of strings")
      }
      names.append(name)
    }
    let scopes: Set<Scope>
    do {
      scopes = try Scope.parseList(names.joined(separator: ","))
    } catch {
      throw error.prefixed("entry \(position) (tenant \(tenant))")
    }
    guard case .string(let hex) = members["key_sha256"], hex.utf8.count == 64, let digest = Hex.decode(hex)
    else {
      throw ConfigurationError("entry \(position) (tenant \(tenant)): key_sha256 must be 64 hex digits")
    }
    let key = HashedKey(tenant: tenant, scopes: scopes, keySHA256: digest)
    try key.validate(position: position)
    return key
  }
}
