import HTTP

/// The checks a route runs before touching storage: key, scope, rate limit, upload cap and
/// signed links, in that order, each failure an `AccessError`.
public final class AccessControl: Sendable {
  /// Keys, limits and signed links together.
  public struct Configuration: Sendable, Equatable {
    public var auth = Authenticator.Configuration()
    public var rateLimit = RateLimiter.Configuration()
    public var uploads = UploadConcurrencyLimiter.Configuration()
    public var signedLinks = SignedURL.Configuration()

    public init() {}

    public func validate() throws(ConfigurationError) {
      try auth.validate()
      try rateLimit.validate()
      try uploads.validate()
      try signedLinks.validate()
    }
  }

  public let authenticator: Authenticator
  public let rateLimiter: RateLimiter
  public let uploadLimiter: UploadConcurrencyLimiter
  public let signer: SignedURL

  /// Builds every part; `warn` is told when signed links use a per-process secret.
  public init(
    configuration: Configuration, clock: @escaping MonotonicClock = systemMonotonicClock,
    warn: (String) -> Void
  ) {
    authenticator = Authenticator(configuration: configuration.auth)
    rateLimiter = RateLimiter(configuration: configuration.rateLimit, clock: clock)
    uploadLimiter = UploadConcurrencyLimiter(configuration: configuration.uploads)
    signer = SignedURL(configuration: configuration.signedLinks, warn: warn)
  }

  /// The principal of a request that needs `scope`: authenticated (401), carrying the scope
  /// (403) and within its rate (429). Refused requests take no token.
  public func authorize(authorizationHeader: String?, scope: Scope) -> Result<Principal, AccessError> {
    let principal: Principal
    switch authenticator.authenticate(authorizationHeader: authorizationHeader) {
    case .missing: return .failure(.missingKey)
    case .invalid: return .failure(.invalidKey)
    case .ok(let p): principal = p
    }
    guard principal.has(scope) else { return .failure(.missingScope(scope)) }
    if case .limited(let seconds) = rateLimiter.acquire(key: principal.keyID) {
      return .failure(.rateLimited(retryAfterSeconds: seconds))
    }
    return .success(principal)
  }

  /// `authorize` for a request head; two `Authorization` fields are refused as ambiguous.
  public func authorize(_ head: HTTPRequestHead, scope: Scope) -> Result<Principal, AccessError> {
    let values = head.headers["Authorization"]
    guard values.count <= 1 else { return .failure(.invalidKey) }
    return authorize(authorizationHeader: values.first, scope: scope)
  }

  /// Starts an upload for `principal`; on success call `endUpload(for:)` exactly once later.
  public func beginUpload(for principal: Principal) -> Result<Void, AccessError> {
    switch uploadLimiter.acquire(key: principal.keyID) {
    case .allowed: .success(())
    case .limited(let seconds): .failure(.tooManyConcurrentUploads(retryAfterSeconds: seconds))
    }
  }

  /// Ends an upload started with a successful `beginUpload(for:)`.
  public func endUpload(for principal: Principal) {
    uploadLimiter.release(key: principal.keyID)
  }

  /// Checks a signed link for `id`; `tenantOfID` is the stored tenant (nil when unknown).
  public func verifySignedLink(id: String, query: String?, tenantOfID: String?, now: Int) -> Result<
    Void, AccessError
  > {
    switch signer.verify(id: id, query: query, tenantOfID: tenantOfID, now: now) {
    case .valid: .success(())
    case .expired: .failure(.signedLinkExpired)
    case .invalid: .failure(.signedLinkInvalid)
    }
  }
}
