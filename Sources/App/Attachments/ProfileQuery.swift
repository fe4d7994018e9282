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

/// The `frame` query parameter of a video's frame (`?frame=3`, from 1): nil when absent;
/// `AppError.invalidFrame` for anything but a positive number.
enum FrameQuery {
  static func frame(in query: Substring?) -> Result<Int?, AppError> {
    guard let query else { return .success(nil) }
    var frame: Int?
    for pair in query.split(separator: "&") where pair.hasPrefix("frame=") {
      guard let number = Int(pair.dropFirst("frame=".count)), number >= 1, number <= 1000 else {
        return .failure(.invalidFrame)
      }
      frame = number
    }
    return .success(frame)
  }
}
