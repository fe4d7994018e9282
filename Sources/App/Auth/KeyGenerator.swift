import Crypto

/// Makes new API keys for `attachd keys new`.
public enum KeyGenerator {
  /// Prefix of every generated key, so that a leaked key is easy to recognise (secret scanners).
  public static let prefix = "ak_"
  /// Random bytes per key: 192 bits, 32 base64url characters.
  public static let randomByteCount = 24

  /// A new key: `ak_` + 32 base64url characters from the system CSPRNG.
  public static func newKey() -> String {
    prefix + Base64URL.encode(SecureRandom.bytes(randomByteCount))
  }

  /// A new key for `tenant` with `scopes`, and the configuration entry that accepts it.
  public static func generate(tenant: String, scopes: Set<Scope>) -> (key: String, entry: HashedKey) {
    let key = newKey()
    return (key, HashedKey(tenant: tenant, scopes: scopes, key: key))
  }

  /// What `attachd keys new` was asked for.
  public struct Request: Sendable, Equatable {
    public var tenant: String
    public var scopes: Set<Scope>

    public init(tenant: String, scopes: Set<Scope>) {
      self.tenant = tenant
      self.scopes = scopes
    }
  }

  /// Usage of `attachd keys`.
  public static let usage = """
    usage: attachd keys new --tenant TENANT --scopes upload,read[,delete]

    Prints a new API key once (store it now: only its SHA-256 is kept) and the JSON entry
    to add to the "keys" array of the "auth" section of Config/attachd.json.
    """

  /// Parses the arguments after `attachd keys`: `new --tenant T --scopes a,b` (also `--x=v`).
  public static func parseArguments(_ arguments: [String]) throws(ConfigurationError) -> Request {
    guard let command = arguments.first else { throw ConfigurationError("no keys command given (try: new)") }
    guard command == "new" else { throw ConfigurationError("unknown keys command \(command) (try: new)") }
    var tenant: String?
    var scopes: Set<Scope>?
    var rest = arguments.dropFirst()[...]
    while let argument = rest.popFirst() {
      let name: Substring
      let value: String
      if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
        name = argument[..<equals]
        value = String(argument[argument.index(after: equals)...])
      } else {
        name = argument[...]
        guard name == "--tenant" || name == "--scopes" else {
          throw ConfigurationError("unknown option \(argument)")
        }
        guard let next = rest.popFirst() else { throw ConfigurationError("\(argument) needs a value") }
        value = next
      }
      switch name {
      case "--tenant":
        guard HashedKey.isValidTenant(value) else {
          throw ConfigurationError(
            "--tenant must be 1…\(APIKey.maximumTenantLength) of A-Z a-z 0-9 - _ .")
        }
        tenant = value
      case "--scopes":
        do { scopes = try Scope.parseList(value) } catch { throw error.prefixed("--scopes") }
      default:
        throw ConfigurationError("unknown option \(name)")
      }
    }
    guard let tenant else { throw ConfigurationError("--tenant is required") }
    guard let scopes else { throw ConfigurationError("--scopes is required (e.g. upload,read)") }
    return Request(tenant: tenant, scopes: scopes)
  }
}
