import Foundation
import ImagePipeline

// Settings for the clients that read attachd's answers: browser origins (CORS), absolute links
// and model profiles. In their own list so the core table stays readable.
extension ConfigurationKey {
  static let clientKeys: [ConfigurationKey] = [
    ConfigurationKey(
      path: "server.publicBaseURL", environment: "ATTACHD_PUBLIC_BASE_URL", flag: nil, defaultText: "none",
      summary: "scheme://host[:port][/prefix] that makes url, signed_url and Location absolute",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.attachments.publicBaseURL = try PublicBaseURL.normalised(value.text())
      }),
    ConfigurationKey(
      path: "cors.allowedOrigins", environment: "ATTACHD_CORS_ALLOWED_ORIGINS", flag: nil,
      defaultText: "none",
      summary: "comma-separated origins whose pages may call attachd (JSON: array of strings)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.cors.allowedOrigins = try value.listText().split(separator: ",").map {
          $0.trimmingASCIIWhitespace().lowercased()
        }.filter { !$0.isEmpty }
      }),
    ConfigurationKey(
      path: "cors.tenantOrigins", environment: "ATTACHD_CORS_TENANT_ORIGINS", flag: nil, defaultText: "none",
      summary: "origins per tenant: JSON object {\"tenant\": [\"https://…\"]}",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        var origins: [String: [String]] = [:]
        for (tenant, member) in try value.tenantObject() {
          guard case .array(let list) = member else {
            throw ConfigurationError("\(tenant): expected an array of origins")
          }
          origins[tenant] = try list.map { element throws(ConfigurationError) in
            guard case .string(let origin) = element else {
              throw ConfigurationError("\(tenant): expected an array of origins")
            }
            return origin.lowercased()
          }
        }
        config.cors.tenantOrigins = origins
      }),
    .integer(
      "cors.maxAge", env: "ATTACHD_CORS_MAX_AGE", flag: nil,
      summary: "seconds a browser may cache a preflight answer", range: 0...86_400, \.cors.maxAge),
    ConfigurationKey(
      path: "profiles.default", environment: "ATTACHD_DEFAULT_PROFILE", flag: nil, defaultText: "default",
      summary: "profile served and described when a request names none (default, anthropic, openai, gemini)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.attachments.profiles.defaultProfile = try ProfileOptions.profile(named: value.text())
      }),
    ConfigurationKey(
      path: "profiles.tenantDefaults", environment: "ATTACHD_TENANT_PROFILES", flag: nil, defaultText: "none",
      summary: "per-tenant default profile: JSON object {\"tenant\": \"anthropic\"}",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        var defaults: [String: ModelProfile] = [:]
        for (tenant, member) in try value.tenantObject() {
          guard case .string(let name) = member else {
            throw ConfigurationError("\(tenant): expected a profile name")
          }
          do throws(ConfigurationError) {
            defaults[tenant] = try ProfileOptions.profile(named: name)
          } catch { throw error.prefixed(tenant) }
        }
        config.attachments.profiles.tenantDefaults = defaults
      }),
  ]
}

extension ConfigurationValue {
  /// A JSON object keyed by tenant (from a file, or as JSON text from the environment; empty
  /// text is an empty object).
  func tenantObject() throws(ConfigurationError) -> [String: JSONValue] {
    var json: JSONValue
    switch self {
    case .json(let value): json = value
    case .text(let text):
      if text.trimmingASCIIWhitespace().isEmpty { return [:] }
      do { json = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) } catch {
        throw ConfigurationError("not valid JSON (expected an object keyed by tenant)")
      }
    }
    guard case .object(let members) = json else {
      throw ConfigurationError("expected an object keyed by tenant")
    }
    return members
  }
}
