/// A configuration value that is missing, malformed or out of range.
///
/// The message names where the value came from (file, environment variable or flag) and
/// never contains a secret.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
  public var message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }

  /// The same error with where the value came from in front, e.g. `ATTACHD_PORT: …`.
  func prefixed(_ source: String) -> ConfigurationError {
    ConfigurationError("\(source): \(message)")
  }
}
