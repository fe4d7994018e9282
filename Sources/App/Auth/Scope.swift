import Storage

/// What a key may do with its tenant's attachments.
public enum Scope: String, Sendable, Hashable, CaseIterable, Comparable {
  /// `POST /v1/attachments`.
  case upload
  /// `GET`/`HEAD /v1/attachments/{id}` and `/meta`.
  case read
  /// `DELETE /v1/attachments/{id}`.
  case delete

  public static func < (lhs: Scope, rhs: Scope) -> Bool {
    allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
  }

  /// Parses a list of scope names (`upload,read` or `upload+read`); unknown names and an empty
  /// list are errors.
  public static func parseList(_ text: String) throws(ConfigurationError) -> Set<Scope> {
    var scopes = Set<Scope>()
    for name in text.split(whereSeparator: { $0 == "," || $0 == "+" }) {
      let trimmed = String(name.trimmingASCIIWhitespace())
      guard let scope = Scope(rawValue: trimmed) else {
        throw ConfigurationError("unknown scope \"\(trimmed)\" (known: upload, read, delete)")
      }
      scopes.insert(scope)
    }
    guard !scopes.isEmpty else { throw ConfigurationError("at least one scope is needed") }
    return scopes
  }
}

/// Who made an authenticated request: a tenant, what it may do, a loggable key id and, for
/// an upload token, the end user it speaks for.
public struct Principal: Sendable, Equatable {
  /// The tenant that owns every attachment this principal touches.
  public var tenant: String
  /// What the key or token may do.
  public var scopes: Set<Scope>
  /// A short, non-secret id of the key or token issuer key for logs (`k_…` for an API key,
  /// `t_…` for a token key).
  public var keyID: String
  /// The end user of an upload token (its `sub`): the owner of what it uploads, and the only
  /// owner whose attachments it may read or delete. Nil for an API key, which acts for the
  /// whole tenant.
  public var user: String?
  /// A token's own allowances (`jti`, `max_files`, `max_bytes`, `exp`); nil for an API key.
  public var token: TokenGrant?

  public init(
    tenant: String, scopes: Set<Scope>, keyID: String, user: String? = nil, token: TokenGrant? = nil
  ) {
    self.tenant = tenant
    self.scopes = scopes
    self.keyID = keyID
    self.user = user
    self.token = token
  }

  /// Whether the key or token carries `scope` (a missing scope is a 403, not a 401).
  public func has(_ scope: Scope) -> Bool { scopes.contains(scope) }

  /// Whose attachments this principal sees: API keys the whole tenant, a token only its own
  /// user's (`Viewer.sees`).
  public var viewer: Viewer { user.map(Viewer.user) ?? .tenant }

  /// What rate limits and upload caps count under: the key for an API key, the (tenant, user)
  /// pair for a token, so that every phone of an app has its own bucket.
  public var limitKey: String {
    guard let user else { return keyID }
    // The tenant cannot contain a line break, so the pair reads back unambiguously.
    return "u\n" + tenant + "\n" + user
  }
}

/// What an upload token allows beyond its scopes, from its claims.
public struct TokenGrant: Sendable, Equatable {
  /// The token's `jti`, under which files and bytes are counted.
  public var jti: String?
  /// Files this `jti` may store in all (`max_files`).
  public var maxFiles: Int?
  /// Upload bytes this `jti` may send in all (`max_bytes`).
  public var maxBytes: Int?
  /// The token's `exp`, Unix seconds: counters are kept until then.
  public var expiresAt: Int

  public init(jti: String?, maxFiles: Int?, maxBytes: Int?, expiresAt: Int) {
    self.jti = jti
    self.maxFiles = maxFiles
    self.maxBytes = maxBytes
    self.expiresAt = expiresAt
  }
}

/// The answer to "who sent this `Authorization` header?".
public enum AuthResult: Sendable, Equatable {
  /// No `Authorization` header (→ 401).
  case missing
  /// A header that is malformed, not `Bearer`, or carries an unknown API key (→ 401).
  case invalid
  /// A known key or a valid token.
  case ok(Principal)
  /// A token (not an API key) refused for a stated reason (→ 401).
  case refused(TokenError)
}
