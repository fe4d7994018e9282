import Crypto
import Foundation

/// Maps an `Authorization: Bearer <credential>` header to a `Principal`: an upload token
/// (three dot-separated segments, see `TokenVerifier`) or an API key, in time that does not
/// depend on which key (if any) matches.
///
/// The presented key is hashed with SHA-256 and the hash is compared with *every* stored hash
/// using `constantTimeEquals`, with no early exit and no lookup keyed by the secret, so timing
/// tells an attacker neither how many bytes of a key were right nor which entry matched.
public struct Authenticator: Sendable {
  /// The keys the service accepts.
  public struct Configuration: Sendable, Equatable {
    /// Hashed keys with scopes (`auth.keys` in the file, `ATTACHD_AUTH_KEYS` as JSON text).
    public var keys: [HashedKey] = []
    /// Plain `tenant:key` pairs (`ATTACHD_API_KEYS`, for containers and tests); they carry
    /// every scope.
    public var apiKeys: [APIKey] = []
    /// Upload-token issuer keys, lifetime and leeway (`auth.tokenKeys`, `auth.tokenMaxTTL`,
    /// `auth.tokenLeeway`).
    public var tokens = TokenVerifier.Configuration()

    public init(keys: [HashedKey] = [], apiKeys: [APIKey] = [], tokens: TokenVerifier.Configuration = .init())
    {
      self.keys = keys
      self.apiKeys = apiKeys
      self.tokens = tokens
    }

    /// Every entry, plain keys hashed and given all scopes.
    public var allEntries: [HashedKey] {
      keys + apiKeys.map { HashedKey(tenant: $0.tenant, scopes: Set(Scope.allCases), key: $0.key) }
    }

    /// Checks each entry and that no key (or key id) is given twice: one key must mean one tenant.
    public func validate() throws(ConfigurationError) {
      for (index, key) in keys.enumerated() {
        do { try key.validate(position: index + 1) } catch { throw error.prefixed("auth.keys") }
      }
      for (index, key) in apiKeys.enumerated() {
        do { try key.validate(position: index + 1) } catch { throw error.prefixed("auth.apiKeys") }
      }
      var seenHashes = Set<[UInt8]>()
      var seenIDs = Set<String>()
      for entry in allEntries {
        guard seenHashes.insert(entry.keySHA256).inserted else {
          throw ConfigurationError("auth: a key of tenant \(entry.tenant) is given twice")
        }
        // Two different keys sharing a 32-bit id would share logs and rate-limit buckets.
        guard seenIDs.insert(entry.keyID).inserted else {
          throw ConfigurationError("auth: two keys share the key id \(entry.keyID); generate a new one")
        }
      }
      try tokens.validate()
    }
  }

  /// One stored key, ready to compare.
  struct Entry: Sendable {
    var digest: [UInt8]
    var principal: Principal
  }

  /// Longest API key looked at; longer keys are refused without hashing.
  public static let maximumKeyLength = 1024

  let entries: [Entry]
  /// Verifies upload tokens.
  public let tokens: TokenVerifier
  /// The comparison used; tests count calls through it. Always constant-time in production.
  let compare: @Sendable ([UInt8], [UInt8]) -> Bool

  /// An authenticator for the configured keys (validate the configuration first).
  public init(configuration: Configuration) {
    self.init(
      entries: configuration.allEntries, tokens: TokenVerifier(configuration: configuration.tokens),
      compare: { constantTimeEquals($0, $1) })
  }

  init(
    entries: [HashedKey], tokens: TokenVerifier = TokenVerifier(configuration: .init()),
    compare: @escaping @Sendable ([UInt8], [UInt8]) -> Bool
  ) {
    self.tokens = tokens
    self.entries = entries.map {
      Entry(digest: $0.keySHA256, principal: Principal(tenant: $0.tenant, scopes: $0.scopes, keyID: $0.keyID))
    }
    self.compare = compare
  }

  /// Number of keys known.
  public var count: Int { entries.count }

  /// Who sent `authorizationHeader` (the field value, or nil when the request has none);
  /// `now` (Unix seconds, the current time when nil) is what a token's times are judged at.
  public func authenticate(authorizationHeader: String?, now: Int? = nil) -> AuthResult {
    guard let header = authorizationHeader else { return .missing }
    guard let key = Self.bearerToken(header) else { return .invalid }
    if TokenVerifier.isToken(key) {
      switch tokens.verify(key, now: now ?? Int(Date().timeIntervalSince1970)) {
      case .success(let principal): return .ok(principal)
      case .failure(let error): return .refused(error)
      }
    }
    guard key.utf8.count <= Self.maximumKeyLength else { return .invalid }
    let digest = SHA256.hash(key.utf8)
    var match: Int = -1
    // Every entry is compared, whatever the outcome of earlier comparisons.
    for index in entries.indices {
      let equal = compare(digest, entries[index].digest)
      match = equal ? index : match
    }
    return match >= 0 ? .ok(entries[match].principal) : .invalid
  }

  /// The token of a `Bearer` credential (scheme case-insensitive, RFC 9110 §11.4), or nil.
  ///
  /// The credential must be 1…`TokenVerifier.maximumTokenLength` visible ASCII characters
  /// with no spaces or commas.
  static func bearerToken<S: StringProtocol>(_ header: S) -> Substring? {
    let value = header.trimmingASCIIWhitespace()
    let utf8 = value.utf8
    guard utf8.count > 7 else { return nil }
    let scheme = utf8.prefix(6)
    guard scheme.elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }) else { return nil }
    let afterScheme = utf8.index(utf8.startIndex, offsetBy: 6)
    guard utf8[afterScheme] == UInt8(ascii: " ") || utf8[afterScheme] == UInt8(ascii: "\t") else {
      return nil
    }
    let token = value[afterScheme...].trimmingASCIIWhitespace()
    guard !token.isEmpty, token.utf8.count <= TokenVerifier.maximumTokenLength,
      token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") })
    else { return nil }
    return token
  }
}
