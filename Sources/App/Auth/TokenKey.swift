import Crypto
import Foundation

/// A signing algorithm attachd verifies upload tokens with.
public enum TokenAlgorithm: String, Sendable, Equatable, CaseIterable {
  /// Ed25519 (RFC 8037); attachd holds only the public key. The recommended choice.
  case edDSA = "EdDSA"
  /// HMAC-SHA-256 with a per-tenant secret; attachd must hold the secret itself.
  case hs256 = "HS256"

  /// The algorithm a JOSE `alg` names; `Ed25519` (RFC 9864's fully specified name) is EdDSA.
  init?(joseName: String) {
    switch joseName {
    case "EdDSA", "Ed25519": self = .edDSA
    case "HS256": self = .hs256
    default: return nil
    }
  }
}

/// One issuer key of `auth.tokenKeys`: which tenant a token signed by it speaks for, and how
/// to check the signature.
///
/// JSON shapes (one element of the array; members starting with `_` are comments):
/// `{"tenant":"acme","iss":"acme-backend","kid":"2026-12","alg":"EdDSA","public_key_pem":"-----BEGIN PUBLIC KEY-----\n…"}`
/// `{"tenant":"acme","iss":"acme-backend","alg":"HS256","secret_env":"ATTACHD_TOKEN_SECRET_ACME"}`
/// (or `"secret_file":"/run/secrets/acme-token"`).
///
/// An HS256 secret is never written into the configuration itself: the entry names where it
/// is. Verifying an HMAC needs the key itself (a hash of it cannot verify), so whoever reads
/// the secret can mint tokens for every user of the tenant; keeping it out of the file means
/// a leaked or committed config file gives nothing away, while an EdDSA entry's public key
/// gives nothing away even when leaked with the rest.
public struct TokenKey: Sendable, Equatable, CustomStringConvertible {
  /// Where an HS256 secret is read from at start-up.
  public enum SecretSource: Sendable, Equatable {
    /// An environment variable holding the secret text.
    case environment(String)
    /// A file holding the secret text (one trailing newline is ignored).
    case file(String)
  }

  /// The tenant whose users tokens of this key speak for.
  public var tenant: String
  /// The `iss` claim that selects this key; one issuer belongs to one tenant.
  public var issuer: String
  /// The `kid` header that selects this key among an issuer's keys (rotation), if any.
  public var keyID: String?
  public var algorithm: TokenAlgorithm
  /// EdDSA: the issuer's public key as PEM (SubjectPublicKeyInfo).
  public var publicKeyPEM: String?
  /// HS256: where the secret comes from.
  public var secretSource: SecretSource?
  /// HS256: the secret, once `TokenVerifier.Configuration.resolveSecrets` has read it.
  public var secret: [UInt8]?

  public init(
    tenant: String, issuer: String, keyID: String? = nil, algorithm: TokenAlgorithm,
    publicKeyPEM: String? = nil, secretSource: SecretSource? = nil, secret: [UInt8]? = nil
  ) {
    self.tenant = tenant
    self.issuer = issuer
    self.keyID = keyID
    self.algorithm = algorithm
    self.publicKeyPEM = publicKeyPEM
    self.secretSource = secretSource
    self.secret = secret
  }

  /// Shortest HS256 secret: 32 bytes, the size of the hash (RFC 7518 §3.2).
  public static let minimumSecretBytes = 32
  /// Longest `iss`, `kid`, `sub` and `jti` accepted.
  public static let maximumNameBytes = 255

  /// Never shows a secret.
  public var description: String {
    "TokenKey(tenant: \(tenant), iss: \(issuer), kid: \(keyID ?? "-"), alg: \(algorithm.rawValue))"
  }

  /// A short, non-secret id for logs and metrics: `t_` + 8 hex digits of SHA-256(iss, kid).
  public var logID: String {
    "t_" + String(Hex.encode(SHA256.hash(issuer + "\n" + (keyID ?? ""))).prefix(8))
  }

  /// The entry as one JSON line, members in a fixed order, ready for `auth.tokenKeys`.
  public var jsonLine: String {
    var out: [UInt8] = Array(#"{"tenant":"#.utf8)
    func member(_ name: String, _ value: String) {
      out.append(contentsOf: ",\"\(name)\":".utf8)
      JSONText.appendQuoted(value, to: &out)
    }
    JSONText.appendQuoted(tenant, to: &out)
    member("iss", issuer)
    if let keyID { member("kid", keyID) }
    member("alg", algorithm.rawValue)
    if let publicKeyPEM { member("public_key_pem", publicKeyPEM) }
    switch secretSource {
    case .environment(let name): member("secret_env", name)
    case .file(let path): member("secret_file", path)
    case nil: break
    }
    out.append(UInt8(ascii: "}"))
    return String(decoding: out, as: UTF8.self)
  }

  /// Checks names, the key material and the secret's length; `position` (1-based) is used in
  /// messages, which never contain the secret.
  public func validate(position: Int) throws(ConfigurationError) {
    let name = "entry \(position)"
    guard HashedKey.isValidTenant(tenant) else {
      throw ConfigurationError("\(name): tenant must be 1…\(APIKey.maximumTenantLength) of A-Z a-z 0-9 - _ .")
    }
    guard Self.isValidName(issuer) else {
      throw ConfigurationError(
        "\(name) (tenant \(tenant)): iss must be 1…\(Self.maximumNameBytes) printable bytes")
    }
    if let keyID, !Self.isValidName(keyID) {
      throw ConfigurationError(
        "\(name) (tenant \(tenant)): kid must be 1…\(Self.maximumNameBytes) printable bytes")
    }
    switch algorithm {
    case .edDSA:
      guard secretSource == nil, secret == nil else {
        throw ConfigurationError(
          "\(name) (tenant \(tenant)): an EdDSA key takes public_key_pem, not a secret")
      }
      guard let publicKeyPEM, Ed25519PublicKey(pem: publicKeyPEM) != nil else {
        throw ConfigurationError(
          "\(name) (tenant \(tenant)): public_key_pem must be an Ed25519 PEM public key (attachd tokens new-key)"
        )
      }
    case .hs256:
      guard publicKeyPEM == nil, let secretSource else {
        throw ConfigurationError("\(name) (tenant \(tenant)): an HS256 key takes secret_env or secret_file")
      }
      guard let secret else {
        switch secretSource {
        case .environment(let variable):
          throw ConfigurationError("\(name) (tenant \(tenant)): secret_env \(variable) is not set")
        case .file(let path):
          throw ConfigurationError("\(name) (tenant \(tenant)): secret_file \(path) cannot be read")
        }
      }
      guard secret.count >= Self.minimumSecretBytes else {
        throw ConfigurationError(
          "\(name) (tenant \(tenant)): the HS256 secret must be at least \(Self.minimumSecretBytes) bytes")
      }
    }
  }

  /// 1…255 bytes of printable ASCII or any non-ASCII UTF-8 (no control characters).
  static func isValidName(_ name: String) -> Bool {
    !name.isEmpty && name.utf8.count <= maximumNameBytes && !name.utf8.contains { $0 < 0x20 || $0 == 0x7F }
  }
}

extension TokenKey {
  /// Parses the `auth.tokenKeys` value: a JSON array, or (from `ATTACHD_TOKEN_KEYS`) the same
  /// array as JSON text; empty text is an empty list.
  static func parseList(_ value: ConfigurationValue) throws(ConfigurationError) -> [TokenKey] {
    let json: JSONValue
    switch value {
    case .json(let given): json = given
    case .text(let text):
      if text.trimmingASCIIWhitespace().isEmpty { return [] }
      do { json = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) } catch {
        throw ConfigurationError("not valid JSON (expected an array of token key entries)")
      }
    }
    guard case .array(let elements) = json else {
      throw ConfigurationError("expected an array of {tenant, iss, alg, public_key_pem | secret_env} objects")
    }
    var keys: [TokenKey] = []
    for (index, element) in elements.enumerated() {
      keys.append(try parse(element, position: index + 1))
    }
    return keys
  }

  /// Parses one entry; unknown members are errors, and an inline secret is refused unread.
  static func parse(_ json: JSONValue, position: Int) throws(ConfigurationError) -> TokenKey {
    let name = "entry \(position)"
    guard case .object(let members) = json else { throw ConfigurationError("\(name) must be an object") }
    let known = ["tenant", "iss", "kid", "alg", "public_key_pem", "secret_env", "secret_file"]
    for member in members.keys.sorted() where !member.hasPrefix("_") {
      if member == "secret" || member == "k" {
        throw ConfigurationError(
          "\(name): an HS256 secret is not written into the configuration; name it with secret_env or secret_file (better: use EdDSA)"
        )
      }
      guard known.contains(member) else { throw ConfigurationError("\(name): unknown member \(member)") }
    }
    func string(_ member: String) throws(ConfigurationError) -> String? {
      guard let value = members[member] else { return nil }
      guard case .string(let text) = value else {
        throw ConfigurationError("\(name): \(member) must be a string")
      }
      return text
    }
    guard let tenant = try string("tenant") else { throw ConfigurationError("\(name): tenant is required") }
    guard let issuer = try string("iss") else {
      throw ConfigurationError("\(name) (tenant \(tenant)): iss is required")
    }
    guard let algorithmName = try string("alg"), let algorithm = TokenAlgorithm(rawValue: algorithmName)
    else {
      throw ConfigurationError("\(name) (tenant \(tenant)): alg must be EdDSA or HS256")
    }
    var source: SecretSource?
    switch (try string("secret_env"), try string("secret_file")) {
    case (nil, nil): source = nil
    case (let variable?, nil): source = .environment(variable)
    case (nil, let path?): source = .file(path)
    default: throw ConfigurationError("\(name) (tenant \(tenant)): give secret_env or secret_file, not both")
    }
    return TokenKey(
      tenant: tenant, issuer: issuer, keyID: try string("kid"), algorithm: algorithm,
      publicKeyPEM: try string("public_key_pem"), secretSource: source)
  }
}
