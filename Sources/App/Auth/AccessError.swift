import HTTP

/// Why a request was refused before any work: no or bad key, a refused upload token, missing
/// scope, a limit, or a bad signed link.
public enum AccessError: Error, Sendable, Equatable {
  /// An upload token refused for a stated reason (401, 403; rows in `ErrorTable`).
  case token(TokenError)
  /// An end user's daily quota is used up (429; rows in `ErrorTable`).
  case quota(QuotaError)
  /// No `Authorization` header (401).
  case missingKey
  /// A malformed header or an unknown key (401).
  case invalidKey
  /// The key is valid but lacks the scope the route needs (403).
  case missingScope(Scope)
  /// The key's token bucket is empty (429).
  case rateLimited(retryAfterSeconds: Int)
  /// The key already has its maximum of uploads in flight (429).
  case tooManyConcurrentUploads(retryAfterSeconds: Int)
  /// A signed link whose signature does not verify, or for an unknown id (403).
  case signedLinkInvalid
  /// A signed link past its expiry (403).
  case signedLinkExpired

  /// The status, problem `code`, title and headers to answer with (rows for `ErrorTable`).
  public var publicError: PublicError {
    switch self {
    case .token(let error): ErrorTable.publicError(for: error)
    case .quota(let error): ErrorTable.publicError(for: error)
    case .missingKey:
      PublicError(
        status: 401, code: "unauthorized", title: "An API key is required",
        headers: ["WWW-Authenticate": "Bearer"])
    case .invalidKey:
      PublicError(
        status: 401, code: "unauthorized", title: "The API key is not valid",
        headers: ["WWW-Authenticate": #"Bearer error="invalid_token""#])
    case .missingScope(let scope):
      PublicError(status: 403, code: "forbidden", title: "The API key lacks the \(scope.rawValue) scope")
    case .rateLimited(let seconds):
      PublicError(
        status: 429, code: "rate_limited", title: "Too many requests for this key",
        headers: ["Retry-After": String(seconds)])
    case .tooManyConcurrentUploads(let seconds):
      PublicError(
        status: 429, code: "too_many_uploads", title: "Too many uploads in progress for this key",
        headers: ["Retry-After": String(seconds)])
    case .signedLinkInvalid:
      PublicError(status: 403, code: "signed_link_invalid", title: "The signed link is not valid")
    case .signedLinkExpired:
      PublicError(status: 403, code: "signed_link_expired", title: "The signed link has expired")
    }
  }
}
