/// The claims of an upload token that attachd acts on, read strictly.
///
/// Required: `iss` (checked by `TokenVerifier`), `sub` (the end user), `exp`, `scope`
/// (space-separated; names other than upload, read and delete are ignored, as OAuth scope
/// strings may carry other services' scopes). Optional: `iat`, `nbf`, `jti`, `aud` (when present
/// it must name `attachd`), `max_files` and `max_bytes` (either needs a `jti` to count under).
/// Other claims are ignored.
struct TokenClaims: Equatable {
  var subject: String
  var expiresAt: Int
  var issuedAt: Int?
  var notBefore: Int?
  var scopes: Set<Scope>
  var jti: String?
  var maxFiles: Int?
  var maxBytes: Int?

  /// Longest `scope` string accepted, bytes.
  static let maximumScopeBytes = 1024
  /// Largest `max_files` / `max_bytes` accepted (2^53: what every JSON library writes exactly).
  static let maximumAllowance = 1 << 53

  static func parse(_ claims: [String: TokenJSON]) -> Result<TokenClaims, TokenError> {
    guard case .string(let subject) = claims["sub"], TokenKey.isValidName(subject) else {
      return .failure(.claimsInvalid)
    }
    guard let expiresAt = claims["exp"]?.secondsValue else { return .failure(.claimsInvalid) }
    var issuedAt: Int?
    if let value = claims["iat"] {
      guard let seconds = value.secondsValue else { return .failure(.claimsInvalid) }
      issuedAt = seconds
    }
    var notBefore: Int?
    if let value = claims["nbf"] {
      guard let seconds = value.secondsValue else { return .failure(.claimsInvalid) }
      notBefore = seconds
    }
    guard case .string(let scopeText) = claims["scope"], scopeText.utf8.count <= maximumScopeBytes else {
      return .failure(.claimsInvalid)
    }
    let scopes = Set(scopeText.split(separator: " ").compactMap { Scope(rawValue: String($0)) })
    var jti: String?
    if let value = claims["jti"] {
      guard case .string(let text) = value, TokenKey.isValidName(text) else {
        return .failure(.claimsInvalid)
      }
      jti = text
    }
    func allowance(_ name: String) -> Result<Int?, TokenError> {
      guard let value = claims[name] else { return .success(nil) }
      guard case .integer(let number) = value, (1...maximumAllowance).contains(number) else {
        return .failure(.claimsInvalid)
      }
      return .success(number)
    }
    let maxFiles: Int?
    let maxBytes: Int?
    switch (allowance("max_files"), allowance("max_bytes")) {
    case (.success(let files), .success(let bytes)): (maxFiles, maxBytes) = (files, bytes)
    default: return .failure(.claimsInvalid)
    }
    // A limit is counted per `jti`: without one there is nothing to count under.
    if (maxFiles != nil || maxBytes != nil) && jti == nil { return .failure(.claimsInvalid) }
    if let audience = claims["aud"] {
      switch audience {
      case .string(let name) where name == TokenVerifier.audience: break
      case .array(let names) where names.contains(.string(TokenVerifier.audience)): break
      default: return .failure(.audienceInvalid)
      }
    }
    return .success(
      TokenClaims(
        subject: subject, expiresAt: expiresAt, issuedAt: issuedAt, notBefore: notBefore, scopes: scopes,
        jti: jti,
        maxFiles: maxFiles, maxBytes: maxBytes))
  }

  /// Why the token is not valid at `now`, or nil: expired, not yet valid, issued in the
  /// future, or living longer than the maximum (all beyond the leeway).
  func timeError(now: Int, configuration: TokenVerifier.Configuration) -> TokenError? {
    let leeway = Int(configuration.leewaySeconds.rounded(.down))
    let maxTTL = Int(configuration.maxTTLSeconds.rounded(.down))
    if now >= expiresAt.addingReportingOverflow(leeway).partialValue { return .expired }
    if let notBefore, now + leeway < notBefore { return .notYetValid }
    if let issuedAt, now + leeway < issuedAt { return .issuedInFuture }
    // With `iat` the lifetime is the issuer's own; without it, from now, allowing the skew.
    if let issuedAt {
      if expiresAt - issuedAt > maxTTL { return .lifetimeTooLong }
    } else if expiresAt - now > maxTTL + leeway {
      return .lifetimeTooLong
    }
    return nil
  }
}
