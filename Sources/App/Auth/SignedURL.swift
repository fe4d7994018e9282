import Crypto

/// Signed links: a path that fetches one attachment with no API key until it expires.
///
/// `/v1/attachments/{id}?exp=<unix seconds>&sig=<base64url HMAC-SHA256>` where the MAC is
/// over `"v1\n{id}\n{exp}\n{tenant}"`. The tenant is inside the MAC but not in the link: the
/// server looks up the id's tenant and verifies, so a link can never be moved to another
/// tenant's id. The secret comes from `ATTACHD_SIGNING_SECRET`; without one each process makes
/// a random secret and its links stop working when it restarts (and on other nodes).
public struct SignedURL: Sendable, CustomStringConvertible {
  /// Secret and lifetime of signed links.
  public struct Configuration: Sendable, Equatable {
    /// HMAC key text (at least 32 characters); nil = random per process, with a warning.
    public var secret: String?
    /// Seconds a new link stays valid.
    public var ttlSeconds: Int = 3600

    public init(secret: String? = nil, ttlSeconds: Int = 3600) {
      self.secret = secret
      self.ttlSeconds = ttlSeconds
    }

    /// Shortest secret accepted: 32 characters.
    public static let minimumSecretLength = 32
    /// Longest link lifetime: 30 days (attachments expire by then anyway).
    public static let maximumTTLSeconds = 30 * 86_400

    public func validate() throws(ConfigurationError) {
      if let secret, secret.utf8.count < Self.minimumSecretLength {
        throw ConfigurationError(
          "signing.secret must be at least \(Self.minimumSecretLength) characters (e.g. openssl rand -base64 32)"
        )
      }
      guard (1...Self.maximumTTLSeconds).contains(ttlSeconds) else {
        throw ConfigurationError(
          "signing.linkTTL must be 1…\(Self.maximumTTLSeconds) seconds, not \(ttlSeconds)")
      }
    }
  }

  /// What a presented link is worth.
  public enum Verification: Sendable, Equatable {
    /// Signature right, not expired: serve the attachment.
    case valid
    /// Signature right but past its expiry (→ 403).
    case expired
    /// Missing, malformed or tampered `exp`/`sig`, or an unknown id (→ 403).
    case invalid
  }

  /// The path every signed link starts with.
  public static let pathPrefix = "/v1/attachments/"
  /// Bytes of a secret made when none is configured.
  public static let randomSecretByteCount = 32

  private let secret: [UInt8]
  /// Seconds a new link stays valid.
  public let ttlSeconds: Int

  /// A signer with this secret.
  public init(secret: [UInt8], ttlSeconds: Int = 3600) {
    self.secret = secret
    self.ttlSeconds = ttlSeconds
  }

  /// A signer from the configuration: its secret, or a random one after calling `warn` once.
  public init(configuration: Configuration, warn: (String) -> Void) {
    if let text = configuration.secret {
      self.init(secret: Array(text.utf8), ttlSeconds: configuration.ttlSeconds)
    } else {
      warn(
        "ATTACHD_SIGNING_SECRET is not set: signed links use a random per-process secret "
          + "and stop working when the server restarts")
      self.init(secret: SecureRandom.bytes(Self.randomSecretByteCount), ttlSeconds: configuration.ttlSeconds)
    }
  }

  /// Never shows the secret.
  public var description: String { "SignedURL(ttlSeconds: \(ttlSeconds))" }

  /// The signed path for `id` of `tenant`, valid until `expiresAt` (Unix seconds).
  public func make(id: String, tenant: String, expiresAt: Int) -> String {
    let tag = signature(id: id, exp: expiresAt, tenant: tenant)
    return "\(Self.pathPrefix)\(id)?exp=\(expiresAt)&sig=\(Base64URL.encode(tag))"
  }

  /// The signed path for `id` of `tenant`, valid for `ttlSeconds` from `now`, and its expiry.
  public func make(id: String, tenant: String, now: Int) -> (path: String, expiresAt: Int) {
    let expiresAt = now + ttlSeconds
    return (make(id: id, tenant: tenant, expiresAt: expiresAt), expiresAt)
  }

  /// Whether `query` (the text after `?`, no `?`) is a valid signature for `id`.
  ///
  /// `tenantOfID` is the tenant the server has for `id`, nil when the id is unknown; an
  /// unknown id is `.invalid` after the same work as a known one. The signature is checked
  /// before the expiry, so a changed `exp` is `.invalid`, not `.expired`.
  public func verify(id: String, query: String?, tenantOfID: String?, now: Int) -> Verification {
    guard let (exp, presented) = Self.parse(query: query), Self.isSignableID(id) else { return .invalid }
    let expected = signature(id: id, exp: exp, tenant: tenantOfID ?? "")
    let signatureMatches = constantTimeEquals(expected, presented)
    guard signatureMatches, tenantOfID != nil else { return .invalid }
    return now < exp ? .valid : .expired
  }

  /// Whether a query carries `sig` at all: a route can then skip the API key check.
  public static func isSigned(query: String?) -> Bool {
    guard let query else { return false }
    return query.split(separator: "&").contains { $0.hasPrefix("sig=") }
  }

  func signature(id: String, exp: Int, tenant: String) -> [UInt8] {
    HMACSHA256.authenticate("v1\n\(id)\n\(exp)\n\(tenant)", key: secret)
  }

  /// `exp` and `sig` from a query: each exactly once, `exp` canonical decimal, `sig` 32 bytes.
  /// Other parameters are ignored (they are not signed and change nothing).
  static func parse(query: String?) -> (exp: Int, signature: [UInt8])? {
    guard let query else { return nil }
    var exp: Int?
    var signature: [UInt8]?
    for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
      if pair.hasPrefix("exp=") {
        let text = pair.dropFirst(4)
        guard exp == nil, (1...12).contains(text.utf8.count),
          text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
          text == "0" || !text.hasPrefix("0"), let value = Int(text)
        else { return nil }
        exp = value
      } else if pair.hasPrefix("sig=") {
        guard signature == nil, let bytes = Base64URL.decode(String(pair.dropFirst(4))),
          bytes.count == HMACSHA256.byteCount
        else { return nil }
        signature = bytes
      }
    }
    guard let exp, let signature else { return nil }
    return (exp, signature)
  }

  /// Ids with a line break, `/`, `?` or `&` cannot be signed unambiguously.
  static func isSignableID(_ id: String) -> Bool {
    !id.isEmpty && id.utf8.count <= 256
      && !id.utf8.contains { $0 < 0x21 || $0 == 0x7F || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
      && !id.contains("&")
  }
}
