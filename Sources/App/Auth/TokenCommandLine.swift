/// The arguments of `attachd tokens new-key …` and `attachd tokens mint …`.
public enum TokenCommandLine: Sendable, Equatable {
  /// A new issuer key for a tenant.
  case newKey(tenant: String, algorithm: TokenAlgorithm, issuer: String?, keyID: String?)
  /// One token signed with the key in `keyFile`, valid for `lifetime` seconds from now.
  case mint(MintRequest)

  /// What `attachd tokens mint` was asked for.
  public struct MintRequest: Sendable, Equatable {
    public var keyFile: String
    public var issuer: String
    public var subject: String
    public var keyID: String?
    public var scopes: [Scope] = [.upload]
    public var lifetime = 600
    public var jti: String?
    public var maxFiles: Int?
    public var maxBytes: Int?
  }

  /// Usage of `attachd tokens`.
  public static let usage = """
    usage: attachd tokens new-key --tenant TENANT [--alg EdDSA|HS256] [--iss ISSUER] [--kid KID]
           attachd tokens mint --key FILE --iss ISSUER --sub USER [--kid KID] [--scope "upload read"]
                               [--ttl SECONDS] [--jti ID] [--max-files N] [--max-bytes N]

    new-key prints the key for the tenant's backend (EdDSA: a PEM private key; HS256: a secret),
    then the JSON entry to add to "auth": {"tokenKeys": [...]}. EdDSA is the default and the
    better choice: attachd then holds only the public key. An HS256 entry names the variable
    ATTACHD_TOKEN_SECRET_<TENANT> that must hold the secret when attachd starts.

    mint prints one upload token signed with FILE (a PEM Ed25519 private key, or a file holding
    an HS256 secret), for tests and scripts; a backend mints its own (see README).
    """

  /// Parses the arguments after `attachd tokens`.
  public static func parse(_ arguments: [String]) throws(ConfigurationError) -> TokenCommandLine {
    guard let command = arguments.first else {
      throw ConfigurationError("no tokens command given (try: new-key, mint)")
    }
    var options: [String: String] = [:]
    var rest = arguments.dropFirst()[...]
    while let argument = rest.popFirst() {
      guard argument.hasPrefix("--") else { throw ConfigurationError("unexpected argument \(argument)") }
      if let equals = argument.firstIndex(of: "=") {
        options[String(argument[..<equals])] = String(argument[argument.index(after: equals)...])
      } else {
        guard let value = rest.popFirst() else { throw ConfigurationError("\(argument) needs a value") }
        options[argument] = value
      }
    }
    func take(_ name: String) -> String? { options.removeValue(forKey: name) }
    func integer(_ name: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
      guard let text = take(name) else { return nil }
      guard let value = Int(text), range.contains(value) else {
        throw ConfigurationError("\(name) must be a whole number \(range.lowerBound)…\(range.upperBound)")
      }
      return value
    }
    let result: TokenCommandLine
    switch command {
    case "new-key":
      guard let tenant = take("--tenant") else { throw ConfigurationError("--tenant is required") }
      guard HashedKey.isValidTenant(tenant) else {
        throw ConfigurationError("--tenant must be 1…\(APIKey.maximumTenantLength) of A-Z a-z 0-9 - _ .")
      }
      let algorithmName = take("--alg") ?? TokenAlgorithm.edDSA.rawValue
      guard let algorithm = TokenAlgorithm(rawValue: algorithmName) else {
        throw ConfigurationError("--alg must be EdDSA or HS256")
      }
      result = .newKey(tenant: tenant, algorithm: algorithm, issuer: take("--iss"), keyID: take("--kid"))
    case "mint":
      guard let keyFile = take("--key") else { throw ConfigurationError("--key FILE is required") }
      guard let issuer = take("--iss") else { throw ConfigurationError("--iss is required") }
      guard let subject = take("--sub") else { throw ConfigurationError("--sub is required") }
      var request = MintRequest(keyFile: keyFile, issuer: issuer, subject: subject)
      request.keyID = take("--kid")
      if let text = take("--scope") {
        request.scopes = []
        for name in text.split(separator: " ") {
          guard let scope = Scope(rawValue: String(name)) else {
            throw ConfigurationError("unknown scope \"\(name)\" (known: upload, read, delete)")
          }
          request.scopes.append(scope)
        }
      }
      request.lifetime = try integer("--ttl", 1...604_800) ?? request.lifetime
      request.jti = take("--jti")
      request.maxFiles = try integer("--max-files", 1...TokenClaims.maximumAllowance)
      request.maxBytes = try integer("--max-bytes", 1...TokenClaims.maximumAllowance)
      result = .mint(request)
    default:
      throw ConfigurationError("unknown tokens command \(command) (try: new-key, mint)")
    }
    if let unknown = options.keys.sorted().first { throw ConfigurationError("unknown option \(unknown)") }
    return result
  }
}
