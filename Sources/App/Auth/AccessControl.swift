import Foundation
import HTTP

/// The checks a route runs before touching storage: key or token, scope, rate limit, upload
/// cap and signed links, in that order, each failure an `AccessError`.
///
/// Limits count per API key for key callers and per (tenant, end user) for token callers
/// (`Principal.limitKey`), each with its own settings, so that the phones of one app never
/// share a bucket.
public final class AccessControl: Sendable {
  /// Keys, tokens, limits and signed links together.
  public struct Configuration: Sendable, Equatable {
    public var auth = Authenticator.Configuration()
    /// Rate limit per API key.
    public var rateLimit = RateLimiter.Configuration()
    /// Upload cap per API key.
    public var uploads = UploadConcurrencyLimiter.Configuration()
    /// Rate limit per token user.
    public var userRateLimit = RateLimiter.Configuration()
    /// Upload cap per token user.
    public var userUploads = UploadConcurrencyLimiter.Configuration(maxConcurrentUploadsPerKey: 10)
    /// Daily quota per token user.
    public var usage = UsageLimiter.Configuration()
    public var signedLinks = SignedURL.Configuration()

    public init() {}

    public func validate() throws(ConfigurationError) {
      try auth.validate()
      try rateLimit.validate()
      try uploads.validate()
      try userRateLimit.validate()
      try userUploads.validate()
      try usage.validate()
      try signedLinks.validate()
    }
  }

  public let authenticator: Authenticator
  public let rateLimiter: RateLimiter
  public let uploadLimiter: UploadConcurrencyLimiter
  public let userRateLimiter: RateLimiter
  public let userUploadLimiter: UploadConcurrencyLimiter
  public let usage: UsageLimiter
  public let signer: SignedURL
  /// Unix seconds that token times are judged at.
  let wallClock: @Sendable () -> Int

  /// Builds every part; `warn` is told when signed links use a per-process secret or a tenant
  /// verifies tokens with an HS256 secret.
  public init(
    configuration: Configuration, clock: @escaping MonotonicClock = systemMonotonicClock,
    wallClock: @escaping @Sendable () -> Int = { Int(Date().timeIntervalSince1970) }, warn: (String) -> Void
  ) {
    authenticator = Authenticator(configuration: configuration.auth)
    rateLimiter = RateLimiter(configuration: configuration.rateLimit, clock: clock)
    uploadLimiter = UploadConcurrencyLimiter(configuration: configuration.uploads)
    userRateLimiter = RateLimiter(configuration: configuration.userRateLimit, clock: clock)
    userUploadLimiter = UploadConcurrencyLimiter(configuration: configuration.userUploads)
    usage = UsageLimiter(
      configuration: configuration.usage,
      tokenLeewaySeconds: Int(configuration.auth.tokens.leewaySeconds.rounded(.up)))
    signer = SignedURL(configuration: configuration.signedLinks, warn: warn)
    self.wallClock = wallClock
    let hmacTenants = Set(configuration.auth.tokens.keys.filter { $0.algorithm == .hs256 }.map(\.tenant))
    if !hmacTenants.isEmpty {
      warn(
        "upload tokens of \(hmacTenants.sorted().joined(separator: ", ")) are verified with HS256: "
          + "whoever reads the secret can mint tokens for every user; prefer EdDSA keys")
    }
  }

  /// Who sent `head`: its one `Authorization` field checked (two are refused as ambiguous).
  /// Done once per request; `authorize` then judges the result for the route's scope.
  public func authenticate(_ head: HTTPRequestHead) -> AuthResult {
    let values = head.headers["Authorization"]
    guard values.count <= 1 else { return .invalid }
    return authenticator.authenticate(authorizationHeader: values.first, now: wallClock())
  }

  /// The principal of a request that needs `scope`: authenticated (401), carrying the scope
  /// (403) and within its rate (429). Refused requests take no token from a bucket.
  public func authorize(_ authentication: AuthResult, scope: Scope) -> Result<Principal, AccessError> {
    let principal: Principal
    switch authentication {
    case .missing: return .failure(.missingKey)
    case .invalid: return .failure(.invalidKey)
    case .refused(let error): return .failure(.token(error))
    case .ok(let p): principal = p
    }
    guard principal.has(scope) else {
      return .failure(principal.user == nil ? .missingScope(scope) : .token(.insufficientScope(scope)))
    }
    let limiter = principal.user == nil ? rateLimiter : userRateLimiter
    if case .limited(let seconds) = limiter.acquire(key: principal.limitKey) {
      return .failure(.rateLimited(retryAfterSeconds: seconds))
    }
    return .success(principal)
  }

  /// `authorize` for a request head (authenticated now).
  public func authorize(_ head: HTTPRequestHead, scope: Scope) -> Result<Principal, AccessError> {
    authorize(authenticate(head), scope: scope)
  }

  /// `authorize` for an `Authorization` header value.
  public func authorize(authorizationHeader: String?, scope: Scope) -> Result<Principal, AccessError> {
    authorize(
      authenticator.authenticate(authorizationHeader: authorizationHeader, now: wallClock()), scope: scope)
  }

  /// Starts an upload for `principal`; on success call `endUpload(for:)` exactly once later.
  public func beginUpload(for principal: Principal) -> Result<Void, AccessError> {
    let limiter = principal.user == nil ? uploadLimiter : userUploadLimiter
    switch limiter.acquire(key: principal.limitKey) {
    case .allowed: return .success(())
    case .limited(let seconds): return .failure(.tooManyConcurrentUploads(retryAfterSeconds: seconds))
    }
  }

  /// Ends an upload started with a successful `beginUpload(for:)`.
  public func endUpload(for principal: Principal) {
    let limiter = principal.user == nil ? uploadLimiter : userUploadLimiter
    limiter.release(key: principal.limitKey)
  }

  /// Uploads in flight over keys and token users.
  public var uploadsInFlight: Int { uploadLimiter.totalInFlight + userUploadLimiter.totalInFlight }

  /// The largest body `principal` may send in one upload: the server's cap, or less when a
  /// token's `max_bytes` is smaller (refused as the bytes arrive, before they are all read).
  public func maxUploadBytes(for principal: Principal, serverLimit: Int) -> Int {
    guard let maxBytes = principal.token?.maxBytes else { return serverLimit }
    return min(serverLimit, maxBytes)
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
