import Foundation

/// Builds the configuration in layers: defaults < JSON file < `ATTACHD_*` environment < flags.
///
/// The environment is passed in as a dictionary so that tests never touch the process's own.
public enum ConfigurationLoader {
  /// The file read when neither `--config` nor `ATTACHD_CONFIG` names one (when it exists).
  public static let defaultFile = "Config/attachd.json"
  /// Environment variable naming the configuration file.
  public static let configFileVariable = "ATTACHD_CONFIG"

  /// Loads, layers and validates the configuration for `attachd serve`.
  public static func load(
    options: ServeOptions, environment: [String: String],
    fileExists: (String) -> Bool = {
      FileManager.default.fileExists(atPath: $0)
    }
  ) throws(ConfigurationError) -> Application.Configuration {
    var config = Application.Configuration()
    if let path = options.configPath ?? environment[configFileVariable] {
      try applyFile(at: path, to: &config)
    } else if fileExists(defaultFile) {
      try applyFile(at: defaultFile, to: &config)
    }
    try applyEnvironment(environment, to: &config)
    try applyFlags(options.settings, to: &config)
    // HS256 secrets are named by the configuration, never written into it: read them now.
    config.auth.tokens.resolveSecrets(environment: environment)
    try config.validate()
    return config
  }

  /// Reads a JSON configuration file and applies it.
  public static func applyFile(at path: String, to config: inout Application.Configuration)
    throws(ConfigurationError)
  {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw ConfigurationError("\(path): cannot read the configuration file")
    }
    try applyJSON(data, source: path, to: &config)
  }

  /// Applies a JSON document: an object of sections (`server`, `storage`, …) of settings.
  /// Unknown sections and keys are errors, so that a typo does not silently keep a default.
  /// Keys starting with `_` are comments.
  public static func applyJSON(_ data: Data, source: String, to config: inout Application.Configuration)
    throws(ConfigurationError)
  {
    let document: JSONValue
    do {
      document = try JSONDecoder().decode(JSONValue.self, from: data)
    } catch {
      throw ConfigurationError("\(source): not valid JSON")
    }
    guard case .object(let sections) = document else {
      throw ConfigurationError("\(source): the top level must be a JSON object")
    }
    for (sectionName, section) in sections.sorted(by: { $0.key < $1.key }) where !sectionName.hasPrefix("_") {
      guard case .object(let members) = section else {
        throw ConfigurationError("\(source): \(sectionName) must be an object")
      }
      try applyMembers(members, under: sectionName, source: source, to: &config)
    }
  }

  /// Applies a section's members; an object that is not a key's value is a nested section
  /// (`"storage": {"s3": {"bucket": …}}` sets `storage.s3.bucket`).
  private static func applyMembers(
    _ members: [String: JSONValue], under prefix: String, source: String,
    to config: inout Application.Configuration
  ) throws(ConfigurationError) {
    for (name, value) in members.sorted(by: { $0.key < $1.key }) where !name.hasPrefix("_") {
      let path = "\(prefix).\(name)"
      guard let key = ConfigurationKey.named(path) else {
        if case .object(let nested) = value,
          ConfigurationKey.all.contains(where: { $0.path.hasPrefix(path + ".") })
        {
          try applyMembers(nested, under: path, source: source, to: &config)
          continue
        }
        throw ConfigurationError("\(source): unknown key \(path)")
      }
      do {
        try key.set(&config, .json(value))
      } catch {
        throw error.prefixed("\(source): \(path)")
      }
    }
  }

  /// Applies every known `ATTACHD_*` variable present in `environment`. Other variables
  /// (including unknown `ATTACHD_*` ones such as `ATTACHD_CORPUS`) are ignored.
  public static func applyEnvironment(
    _ environment: [String: String], to config: inout Application.Configuration
  )
    throws(ConfigurationError)
  {
    for key in ConfigurationKey.all {
      guard let value = environment[key.environment] else { continue }
      do {
        try key.set(&config, .text(value))
      } catch {
        throw error.prefixed(key.environment)
      }
    }
  }

  /// Applies flag values in the order given (`--port 9000` → `server.port`).
  public static func applyFlags(
    _ settings: [ServeOptions.Setting], to config: inout Application.Configuration
  )
    throws(ConfigurationError)
  {
    for setting in settings {
      guard let key = ConfigurationKey.all.first(where: { $0.flag == setting.flag }) else {
        throw ConfigurationError("\(setting.flag): unknown option")
      }
      do {
        try key.set(&config, .text(setting.value))
      } catch {
        throw error.prefixed(setting.flag)
      }
    }
  }
}
