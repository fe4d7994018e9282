import ImagePipeline

/// Which model profile a request gets when it names none: the tenant's default, else the
/// service-wide one (`profiles.default`, `profiles.tenantDefaults`).
public struct ProfileOptions: Sendable, Equatable {
  /// The profile of tenants without their own default.
  public var defaultProfile = ModelProfile.default
  /// Per-tenant defaults.
  public var tenantDefaults: [String: ModelProfile] = [:]

  public init() {}

  /// The profile `tenant` gets when a request names none.
  public func defaultProfile(for tenant: String) -> ModelProfile {
    tenantDefaults[tenant] ?? defaultProfile
  }

  /// The profile called `name`, or an error listing the names there are.
  static func profile(named name: String) throws(ConfigurationError) -> ModelProfile {
    guard let profile = ModelProfile(name: name) else {
      throw ConfigurationError(
        "unknown profile \"\(name)\" (one of \(ModelProfile.allCases.map(\.rawValue).joined(separator: ", ")))"
      )
    }
    return profile
  }
}
