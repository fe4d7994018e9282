import ImagePipeline

/// The `profile` query parameter: `?profile=anthropic`, or several with commas
/// (`?profile=anthropic,openai`, also `%2C`, or the parameter repeated).
enum ProfileQuery {
  /// The profiles named in `query` in order, without repeats; empty when the parameter is
  /// absent; `AppError.unknownProfile` for an empty or unknown name.
  static func profiles(in query: Substring?) -> Result<[ModelProfile], AppError> {
    guard let query else { return .success([]) }
    var profiles: [ModelProfile] = []
    for pair in query.split(separator: "&") where pair.hasPrefix("profile=") {
      let value = pair.dropFirst("profile=".count)
      let names = value.replacing("%2C", with: ",").replacing("%2c", with: ",").split(
        separator: ",", omittingEmptySubsequences: false)
      for name in names {
        guard let profile = ModelProfile(name: name) else { return .failure(.unknownProfile) }
        if !profiles.contains(profile) { profiles.append(profile) }
      }
    }
    return .success(profiles)
  }
}
