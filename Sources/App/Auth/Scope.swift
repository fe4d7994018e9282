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

/// Who made an authenticated request: a tenant, what its key may do, and a loggable key id.
public struct Principal: Sendable, Equatable {
  /// The tenant that owns every attachment this principal touches.
  public var tenant: String
  /// What the key may do.
  public var scopes: Set<Scope>
  /// A short, non-secret id of the key (a prefix of its SHA-256) for logs and rate limits.
  public var keyID: String

  public init(tenant: String, scopes: Set<Scope>, keyID: String) {
    self.tenant = tenant
    self.scopes = scopes
    self.keyID = keyID
  }

  /// Whether the key carries `scope` (a missing scope is a 403, not a 401).
  public func has(_ scope: Scope) -> Bool { scopes.contains(scope) }
}

/// The answer to "who sent this `Authorization` header?".
public enum AuthResult: Sendable, Equatable {
  /// No `Authorization` header (→ 401).
  case missing
  /// A header that is malformed, not `Bearer`, or carries an unknown key (→ 401).
  case invalid
  /// A known key.
  case ok(Principal)
}
