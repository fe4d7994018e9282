/// The command line of `attachd serve`, parsed but not yet applied.
public struct ServeOptions: Sendable, Equatable {
  /// One `--flag value` pair that sets a configuration key.
  public struct Setting: Sendable, Equatable {
    public var flag: String
    public var value: String
    public init(flag: String, value: String) {
      self.flag = flag
      self.value = value
    }
  }

  /// `--config PATH`.
  public var configPath: String?
  /// Settings in the order given; a later one wins.
  public var settings: [Setting] = []
  /// `--help` or `-h` was given.
  public var wantsHelp = false

  public init(configPath: String? = nil, settings: [Setting] = [], wantsHelp: Bool = false) {
    self.configPath = configPath
    self.settings = settings
    self.wantsHelp = wantsHelp
  }

  /// Parses `--flag value` and `--flag=value`. Unknown flags, stray arguments and missing
  /// values are usage errors (exit 64).
  public static func parse(_ arguments: [String]) throws(UsageError) -> ServeOptions {
    var options = ServeOptions()
    let flags = Set(ConfigurationKey.all.compactMap(\.flag))
    var index = 0
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      if argument == "--help" || argument == "-h" {
        options.wantsHelp = true
        continue
      }
      guard argument.hasPrefix("--") else { throw UsageError("unexpected argument \"\(argument)\"") }
      var name = argument
      var value: String?
      if let equals = argument.firstIndex(of: "=") {
        name = String(argument[..<equals])
        value = String(argument[argument.index(after: equals)...])
      }
      guard name == "--config" || flags.contains(name) else { throw UsageError("unknown option \(name)") }
      if value == nil {
        guard index < arguments.count else { throw UsageError("\(name) needs a value") }
        value = arguments[index]
        index += 1
      }
      if name == "--config" {
        options.configPath = value
      } else {
        options.settings.append(Setting(flag: name, value: value!))
      }
    }
    return options
  }

  /// The help text of `attachd serve`, listing every setting with its flag, variable and default.
  public static var help: String {
    var lines = [
      "usage: attachd serve [--config FILE] [--host ADDR] [--port N] [--data-dir DIR] [--access-log DEST]",
      "",
      "Settings are read from defaults < \(ConfigurationLoader.defaultFile) (or --config / "
        + "\(ConfigurationLoader.configFileVariable)) < environment < flags.",
      "",
    ]
    for key in ConfigurationKey.all {
      let flag = key.flag.map { "\($0), " } ?? ""
      lines.append("  \(key.path)  (\(flag)\(key.environment); default \(key.defaultText))")
      lines.append("      \(key.summary)")
    }
    return lines.joined(separator: "\n")
  }
}

/// A command line that cannot be understood; `attachd` prints it with the usage and exits 64.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}
