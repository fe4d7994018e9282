import HTTP
import Server

/// Cross-origin rules for browser chat clients, in one place: which origins may call attachd
/// from a page, the preflight answer, and the headers every answer to a listed origin carries.
///
/// Applied by `Application.head` before routing and authentication: a preflight (`OPTIONS` with
/// `Origin` and `Access-Control-Request-Method`) from a listed origin is answered at once (it
/// carries no credentials, so it cannot be authenticated); any other request from a listed
/// origin gets its headers through `RequestContext.responseHeaders`, so every answer, the
/// server's own (413, 408, 503) included, lets the page read it. Routes added later (resumable
/// uploads, tus) are covered without doing anything.
///
/// An origin not on a list gets no `Access-Control-*` header at all, and a plain `OPTIONS` (tus
/// discovery has no `Access-Control-Request-Method`) goes on to the router.
public struct CORSPolicy: Sendable {
  /// `cors.*` settings.
  public struct Configuration: Sendable, Equatable {
    /// Origins (`https://chat.example.com`, `http://127.0.0.1:5173`) whose pages may call any
    /// tenant's routes (with that tenant's credentials).
    public var allowedOrigins: [String] = []
    /// Origins per tenant: such an origin may read only answers to that tenant's credentials.
    public var tenantOrigins: [String: [String]] = [:]
    /// Seconds a browser may cache a preflight answer (`Access-Control-Max-Age`).
    public var maxAge = 600

    public init() {}

    /// Whether any origin is listed at all.
    public var isEnabled: Bool { !allowedOrigins.isEmpty || tenantOrigins.values.contains { !$0.isEmpty } }

    public func validate() throws(ConfigurationError) {
      for origin in allowedOrigins {
        do { try Self.check(origin) } catch { throw error.prefixed("cors.allowedOrigins") }
      }
      for (tenant, origins) in tenantOrigins {
        for origin in origins {
          do { try Self.check(origin) } catch { throw error.prefixed("cors.tenantOrigins: \(tenant)") }
        }
      }
      guard (0...86_400).contains(maxAge) else {
        throw ConfigurationError("cors.maxAge must be 0…86400 seconds, not \(maxAge)")
      }
    }

    /// An origin is `http` or `https`, a host and an optional port: what a browser sends in
    /// `Origin`, lower case, with no path, no trailing slash. `*` and `null` are refused: a
    /// wildcard would let any page read answers, and `null` is what sandboxed frames and
    /// `file:` pages send, which anyone can make.
    static func check(_ origin: String) throws(ConfigurationError) {
      let scheme: Substring
      if origin.hasPrefix("https://") {
        scheme = "https://"
      } else if origin.hasPrefix("http://") {
        scheme = "http://"
      } else {
        throw ConfigurationError("\"\(origin)\" is not an origin (http:// or https://, host, optional port)")
      }
      let rest = origin.dropFirst(scheme.count)
      let allowed = rest.utf8.allSatisfy {
        (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x2D || $0 == 0x3A
          || $0 == 0x5B || $0 == 0x5D
      }
      guard !rest.isEmpty, allowed, !rest.hasPrefix(":"), !rest.hasSuffix(":") else {
        throw ConfigurationError(
          "\"\(origin)\" is not an origin: lower-case host and optional port, no path, no trailing slash")
      }
    }
  }

  /// Methods a page may use (every method a route answers, resumable uploads and tus included).
  static let allowMethods = "GET, HEAD, POST, PATCH, DELETE, OPTIONS"
  /// Request headers a page may send: credentials, idempotency, and the resumable-upload
  /// (IETF draft, interop 3–8) and tus 1.0 headers.
  static let allowHeaders =
    "Authorization, Content-Type, Idempotency-Key, Upload-Draft-Interop-Version, Upload-Complete, "
    + "Upload-Incomplete, Upload-Offset, Upload-Length, Upload-Limit, Tus-Resumable, Upload-Metadata, "
    + "Upload-Defer-Length, Upload-Checksum, Upload-Concat, X-HTTP-Method-Override, X-Request-Id"
  /// Response headers a page may read besides the CORS-safelisted ones.
  static let exposeHeaders =
    "Location, X-Request-Id, Upload-Offset, Upload-Length, Upload-Limit, Upload-Complete, "
    + "Upload-Incomplete, Upload-Expires, Tus-Resumable, Tus-Version, Tus-Max-Size, Tus-Extension, "
    + "Content-Location, Retry-After"

  public let configuration: Configuration
  private let global: Set<String>
  /// Origin → the tenants that list it.
  private let byOrigin: [String: Set<String>]

  public init(configuration: Configuration) {
    self.configuration = configuration
    global = Set(configuration.allowedOrigins)
    var byOrigin: [String: Set<String>] = [:]
    for (tenant, origins) in configuration.tenantOrigins {
      for origin in origins { byOrigin[origin, default: []].insert(tenant) }
    }
    self.byOrigin = byOrigin
  }

  /// The preflight answer for a listed origin, or nil: not a preflight, or an origin on no list
  /// (the request then goes on as if there were no CORS at all).
  ///
  /// A preflight is allowed for an origin on any list, a tenant's included: it carries no
  /// credentials, so it cannot tell which tenant the page belongs to, and it gives nothing
  /// away; the answer to the real request is what the tenant lists guard.
  func preflight(_ head: HTTPRequestHead) -> HTTPResponse? {
    guard configuration.isEnabled, head.method == "OPTIONS",
      head.headers.first(name: "Access-Control-Request-Method") != nil,
      let origin = head.headers.first(name: "Origin"), global.contains(origin) || byOrigin[origin] != nil
    else { return nil }
    return HTTPResponse(
      status: 204,
      headers: [
        "Access-Control-Allow-Origin": origin, "Access-Control-Allow-Methods": Self.allowMethods,
        "Access-Control-Allow-Headers": Self.allowHeaders,
        "Access-Control-Max-Age": String(configuration.maxAge),
        "Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        "Cache-Control": "no-store",
      ])
  }

  /// Adds the headers an answer to `head` carries: `Vary: Origin` whenever CORS is on (the
  /// answer depends on the origin, so a browser cache must not reuse one for another), and for a
  /// listed origin `Access-Control-Allow-Origin` (the origin itself, never `*`) and
  /// `Access-Control-Expose-Headers`.
  ///
  /// `tenant` is asked only for an origin that a tenant list alone names: the tenant the
  /// request's credential authenticates as, or nil (no credential, a bad one, a signed link).
  /// Such an origin reads only answers to its own tenant's credentials.
  func label(_ context: inout RequestContext, _ head: HTTPRequestHead, tenant: () -> String?) {
    guard configuration.isEnabled else { return }
    context.responseHeaders.add(name: "Vary", value: "Origin")
    guard let origin = head.headers.first(name: "Origin") else { return }
    if !global.contains(origin) {
      guard let tenants = byOrigin[origin], let tenant = tenant(), tenants.contains(tenant) else { return }
    }
    context.responseHeaders.add(name: "Access-Control-Allow-Origin", value: origin)
    context.responseHeaders.add(name: "Access-Control-Expose-Headers", value: Self.exposeHeaders)
  }
}
