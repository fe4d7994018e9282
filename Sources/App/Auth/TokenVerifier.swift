import Crypto
import Foundation

/// Verifies upload tokens: JWTs (RFC 7519) in JWS compact form (RFC 7515), signed by a
/// tenant's backend with EdDSA (Ed25519) or HS256, and turns one into a `Principal` that
/// speaks for one end user (`sub`) of one tenant.
///
/// The order of checks: shape and header (`alg`), the issuer's key (`iss`, `kid`), the
/// signature, then the claims. Claims are only judged on a token whose signature verified.
public struct TokenVerifier: Sendable {
  /// Issuer keys, the longest lifetime and the clock leeway.
  public struct Configuration: Sendable, Equatable {
    /// `auth.tokenKeys`.
    public var keys: [TokenKey] = []
    /// `auth.tokenMaxTTL`: longest `exp - iat` accepted, seconds.
    public var maxTTLSeconds: Double = 3600
    /// `auth.tokenLeeway`: clock difference tolerated for `exp`, `nbf` and `iat`, seconds.
    public var leewaySeconds: Double = 60

    public init(keys: [TokenKey] = [], maxTTLSeconds: Double = 3600, leewaySeconds: Double = 60) {
      self.keys = keys
      self.maxTTLSeconds = maxTTLSeconds
      self.leewaySeconds = leewaySeconds
    }

    /// Reads every HS256 secret from the variable or file its entry names.
    ///
    /// A secret that cannot be found stays nil and `validate()` names the entry.
    public mutating func resolveSecrets(
      environment: [String: String],
      readFile: (String) -> [UInt8]? = { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } }
    ) {
      for index in keys.indices {
        switch keys[index].secretSource {
        case .environment(let variable):
          keys[index].secret = environment[variable].flatMap { $0.isEmpty ? nil : Array($0.utf8) }
        case .file(let path):
          guard var bytes = readFile(path) else { continue }
          // A file written by `echo` or an editor ends with a newline that is not the secret's.
          if bytes.last == 0x0A { bytes.removeLast() }
          if bytes.last == 0x0D { bytes.removeLast() }
          keys[index].secret = bytes
        case nil: break
        }
      }
    }

    public func validate() throws(ConfigurationError) {
      guard maxTTLSeconds >= 1, maxTTLSeconds <= 7 * 86_400, maxTTLSeconds.isFinite else {
        throw ConfigurationError("auth.tokenMaxTTL must be 1…604800 seconds")
      }
      guard leewaySeconds >= 0, leewaySeconds <= 3600, leewaySeconds.isFinite else {
        throw ConfigurationError("auth.tokenLeeway must be 0…3600 seconds")
      }
      var tenantOfIssuer: [String: String] = [:]
      var keyIDs = Set<String>()
      for (index, key) in keys.enumerated() {
        do { try key.validate(position: index + 1) } catch { throw error.prefixed("auth.tokenKeys") }
        if let other = tenantOfIssuer[key.issuer], other != key.tenant {
          throw ConfigurationError(
            "auth.tokenKeys: iss \(key.issuer) is given to tenants \(other) and \(key.tenant); an issuer names one tenant"
          )
        }
        tenantOfIssuer[key.issuer] = key.tenant
        if let keyID = key.keyID, !keyIDs.insert(keyID).inserted {
          throw ConfigurationError("auth.tokenKeys: kid \(keyID) is given twice")
        }
      }
    }
  }

  /// One configured key, ready to verify with.
  struct Key: Sendable {
    var entry: TokenKey
    var publicKey: Ed25519PublicKey?
    var logID: String

    func verify(signature: [UInt8], input: ArraySlice<UInt8>) -> Bool {
      switch entry.algorithm {
      case .edDSA:
        return publicKey?.verify(signature: signature, message: input) ?? false
      case .hs256:
        guard let secret = entry.secret else { return false }
        return constantTimeEquals(HMACSHA256.authenticate(input, key: secret), signature)
      }
    }
  }

  /// Longest token looked at, bytes.
  public static let maximumTokenLength = 4096
  /// The audience a token may name in `aud`.
  public static let audience = "attachd"

  public let configuration: Configuration
  let keysByIssuer: [String: [Key]]
  let keysByID: [String: Key]

  /// A verifier for the configured keys (validate the configuration first).
  public init(configuration: Configuration) {
    self.configuration = configuration
    var byIssuer: [String: [Key]] = [:]
    var byID: [String: Key] = [:]
    for entry in configuration.keys {
      let key = Key(
        entry: entry, publicKey: entry.publicKeyPEM.flatMap { Ed25519PublicKey(pem: $0) }, logID: entry.logID)
      byIssuer[entry.issuer, default: []].append(key)
      if let keyID = entry.keyID { byID[keyID] = key }
    }
    keysByIssuer = byIssuer
    keysByID = byID
  }

  /// Whether a bearer credential is a token rather than an API key: JWS compact form is
  /// exactly three segments, so exactly two dots. API keys with two dots are refused at
  /// start-up and generated keys (`ak_` + base64url) have none, so the two never meet.
  public static func isToken<S: StringProtocol>(_ credential: S) -> Bool {
    var dots = 0
    for byte in credential.utf8 where byte == UInt8(ascii: ".") { dots += 1 }
    return dots == 2
  }

  /// The principal a token speaks for at `now` (Unix seconds), or why it is refused.
  public func verify<S: StringProtocol>(_ token: S, now: Int) -> Result<Principal, TokenError> {
    let bytes = Array(token.utf8)
    guard bytes.count <= Self.maximumTokenLength else { return .failure(.malformed) }
    let segments = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard segments.count == 3 else { return .failure(.malformed) }
    guard let headerJSON = Self.decodeObject(segments[0]) else { return .failure(.malformed) }
    guard case .string(let algorithmName) = headerJSON["alg"] else { return .failure(.malformed) }
    if algorithmName.lowercased() == "none" { return .failure(.algorithmNone) }
    guard let algorithm = TokenAlgorithm(joseName: algorithmName) else {
      return .failure(.algorithmUnsupported)
    }
    if let type = headerJSON["typ"] {
      guard case .string(let name) = type, name.uppercased() == "JWT" else { return .failure(.malformed) }
    }
    // No extension is understood, so a critical one must be refused (RFC 7515 §4.1.11).
    guard headerJSON["crit"] == nil else { return .failure(.malformed) }
    var keyID: String?
    if let value = headerJSON["kid"] {
      guard case .string(let name) = value, TokenKey.isValidName(name) else { return .failure(.malformed) }
      keyID = name
    }
    guard let claims = Self.decodeObject(segments[1]) else { return .failure(.malformed) }
    guard case .string(let issuer) = claims["iss"], TokenKey.isValidName(issuer) else {
      return .failure(.claimsInvalid)
    }

    var candidates: [Key]
    if let keyID {
      guard let key = keysByID[keyID] else { return .failure(.issuerUnknown) }
      guard key.entry.issuer == issuer else { return .failure(.keyMismatch) }
      candidates = [key]
    } else {
      candidates = keysByIssuer[issuer] ?? []
      guard !candidates.isEmpty else { return .failure(.issuerUnknown) }
    }
    candidates.removeAll { $0.entry.algorithm != algorithm }
    guard !candidates.isEmpty else { return .failure(.algorithmMismatch) }

    guard let signature = Base64URL.decode(String(decoding: segments[2], as: UTF8.self)) else {
      return .failure(.signatureInvalid)
    }
    let input = bytes[..<segments[1].endIndex]
    // Every candidate is tried (an issuer rotating keys has two or three).
    var matched: Key?
    for key in candidates where key.verify(signature: signature, input: input) { matched = matched ?? key }
    guard let key = matched else { return .failure(.signatureInvalid) }

    switch TokenClaims.parse(claims) {
    case .failure(let error): return .failure(error)
    case .success(let parsed):
      if let error = parsed.timeError(now: now, configuration: configuration) { return .failure(error) }
      return .success(
        Principal(
          tenant: key.entry.tenant, scopes: parsed.scopes, keyID: key.logID, user: parsed.subject,
          token: TokenGrant(
            jti: parsed.jti, maxFiles: parsed.maxFiles, maxBytes: parsed.maxBytes, expiresAt: parsed.expiresAt
          )))
    }
  }

  /// A base64url segment holding a strict JSON object.
  static func decodeObject(_ segment: ArraySlice<UInt8>) -> [String: TokenJSON]? {
    guard let bytes = Base64URL.decode(String(decoding: segment, as: UTF8.self)),
      case .object(let members) = TokenJSON.parse(bytes)
    else { return nil }
    return members
  }
}
