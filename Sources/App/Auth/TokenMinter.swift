import Crypto

/// Makes upload tokens and issuer keys, as a tenant's backend would: for `attachd tokens`,
/// scripts and tests. attachd itself never mints a token to serve.
public enum TokenMinter {
  /// The key a token is signed with.
  public enum Signer: Sendable {
    case edDSA(Ed25519PrivateKey)
    case hs256([UInt8])

    var algorithm: TokenAlgorithm {
      switch self {
      case .edDSA: .edDSA
      case .hs256: .hs256
      }
    }

    func sign(_ input: [UInt8]) -> [UInt8] {
      switch self {
      case .edDSA(let key): key.sign(input)
      case .hs256(let secret): HMACSHA256.authenticate(input, key: secret)
      }
    }
  }

  /// What a token says.
  public struct Claims: Sendable, Equatable {
    public var issuer: String
    public var subject: String
    /// Space-separated in the token; kept in this order.
    public var scopes: [Scope]
    public var issuedAt: Int
    public var expiresAt: Int
    public var notBefore: Int?
    public var jti: String?
    public var maxFiles: Int?
    public var maxBytes: Int?

    public init(
      issuer: String, subject: String, scopes: [Scope] = [.upload], issuedAt: Int, lifetime: Int = 600,
      notBefore: Int? = nil, jti: String? = nil, maxFiles: Int? = nil, maxBytes: Int? = nil
    ) {
      self.issuer = issuer
      self.subject = subject
      self.scopes = scopes
      self.issuedAt = issuedAt
      self.expiresAt = issuedAt + lifetime
      self.notBefore = notBefore
      self.jti = jti
      self.maxFiles = maxFiles
      self.maxBytes = maxBytes
    }
  }

  /// The compact JWS of `claims`, with `kid` in the header when given.
  public static func mint(_ claims: Claims, signer: Signer, keyID: String? = nil) -> String {
    var header = JSONText(capacity: 64)
    header.field("alg", signer.algorithm.rawValue)
    header.field("typ", "JWT")
    if let keyID { header.field("kid", keyID) }
    var payload = JSONText(capacity: 256)
    payload.field("iss", claims.issuer)
    payload.field("sub", claims.subject)
    payload.field("scope", claims.scopes.map(\.rawValue).joined(separator: " "))
    payload.field("iat", claims.issuedAt)
    payload.field("exp", claims.expiresAt)
    if let notBefore = claims.notBefore { payload.field("nbf", notBefore) }
    if let jti = claims.jti { payload.field("jti", jti) }
    if let maxFiles = claims.maxFiles { payload.field("max_files", maxFiles) }
    if let maxBytes = claims.maxBytes { payload.field("max_bytes", maxBytes) }
    let input = Base64URL.encode(header.finish()) + "." + Base64URL.encode(payload.finish())
    return input + "." + Base64URL.encode(signer.sign(Array(input.utf8)))
  }

  /// A new issuer key for `tenant`: the secret part to give the tenant's backend (a PEM private
  /// key, or an HS256 secret as text) and the `auth.tokenKeys` entry that verifies its tokens.
  ///
  /// The HS256 entry names an environment variable for the secret instead of holding it.
  public static func newKey(
    tenant: String, issuer: String? = nil, keyID: String? = nil, algorithm: TokenAlgorithm
  )
    -> (secret: String, entry: TokenKey)
  {
    let issuer = issuer ?? tenant
    switch algorithm {
    case .edDSA:
      let key = Ed25519PrivateKey()
      return (
        key.pem,
        TokenKey(
          tenant: tenant, issuer: issuer, keyID: keyID, algorithm: .edDSA, publicKeyPEM: key.publicKey.pem)
      )
    case .hs256:
      let secret = Base64URL.encode(SecureRandom.bytes(32))
      return (
        secret,
        TokenKey(
          tenant: tenant, issuer: issuer, keyID: keyID, algorithm: .hs256,
          secretSource: .environment(secretVariable(tenant: tenant)), secret: Array(secret.utf8))
      )
    }
  }

  /// `ATTACHD_TOKEN_SECRET_` + the tenant in upper case, other characters as `_`.
  public static func secretVariable(tenant: String) -> String {
    let name = tenant.uppercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    return "ATTACHD_TOKEN_SECRET_" + name
  }

  /// The signer a key file holds: a PEM Ed25519 private key, or else the file's text (less one
  /// trailing newline) as an HS256 secret of at least 32 bytes; nil otherwise.
  public static func signer(keyFile bytes: [UInt8]) -> Signer? {
    let text = String(decoding: bytes, as: UTF8.self)
    if text.contains("-----BEGIN") { return Ed25519PrivateKey(pem: text).map(Signer.edDSA) }
    var secret = bytes
    if secret.last == 0x0A { secret.removeLast() }
    if secret.last == 0x0D { secret.removeLast() }
    return secret.count >= TokenKey.minimumSecretBytes ? .hs256(secret) : nil
  }
}
