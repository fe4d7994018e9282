/// Why an upload token was refused. Each case has its own stable `code`; the rows are in
/// `ErrorTable` (`publicError(for: TokenError)`).
///
/// Everything up to `signatureInvalid` is decided from the token as sent; the claim checks
/// after it run only on a token whose signature verified, so unauthenticated input cannot
/// probe them.
public enum TokenError: Error, Sendable, Equatable, CaseIterable {
  /// Not three base64url segments, a header or claims that are not a strict JSON object,
  /// an unknown `typ`, or a `crit` header (401).
  case malformed
  /// `alg: none` in any spelling: an unsigned token (401).
  case algorithmNone
  /// An `alg` attachd does not verify (RS256, HS512, …) (401).
  case algorithmUnsupported
  /// An `alg` other than the one configured for the issuer's key (algorithm confusion) (401).
  case algorithmMismatch
  /// No configured key for the token's `iss` (or its `kid`) (401).
  case issuerUnknown
  /// A `kid` that names a key of another issuer or tenant than the token's `iss` (401).
  case keyMismatch
  /// The signature does not verify under the issuer's key (401).
  case signatureInvalid
  /// A required claim (`iss`, `sub`, `exp`, `scope`; `jti` with a limit) missing or of the
  /// wrong type or size (401).
  case claimsInvalid
  /// An `aud` that does not name attachd (401).
  case audienceInvalid
  /// `exp` has passed (more than the leeway ago) (401).
  case expired
  /// `nbf` is still ahead (by more than the leeway) (401).
  case notYetValid
  /// `iat` is ahead of the server's clock by more than the leeway (401).
  case issuedInFuture
  /// `exp` is further than `auth.tokenMaxTTL` after `iat` (or now) (401).
  case lifetimeTooLong
  /// The token's `scope` lacks what the route needs (403).
  case insufficientScope(Scope)
  /// The token's `jti` has already stored `max_files` files (403).
  case maxFilesUsed
  /// This upload would take the token's `jti` past `max_bytes` (403).
  case maxBytesExceeded

  public static let allCases: [TokenError] = [
    .malformed, .algorithmNone, .algorithmUnsupported, .algorithmMismatch, .issuerUnknown, .keyMismatch,
    .signatureInvalid, .claimsInvalid, .audienceInvalid, .expired, .notYetValid, .issuedInFuture,
    .lifetimeTooLong, .insufficientScope(.upload), .maxFilesUsed, .maxBytesExceeded,
  ]
}
