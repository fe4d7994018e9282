private import CPQ
private import DelayLoadPQ
import Foundation

extension PostgresIndex {
  /// Settings for connecting to the index database.
  ///
  /// `description`, `debugDescription` and the mirror show the URL with its password replaced
  /// by `***`, so printing or dumping a configuration never reveals it.
  public struct Configuration: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
  {
    /// libpq connection URI: `postgresql://user:password@host:port/database?sslmode=…`.
    ///
    /// The timeouts below override any the URI sets itself.
    public var url: String
    /// Most connections held open at once; a call waits for one when all are in use.
    public var poolSize: Int
    /// How long a call waits for a free connection before failing with `.busy`, seconds.
    public var poolTimeout: TimeInterval
    /// How long opening a connection may take before failing with `.unavailable`, seconds.
    public var connectTimeout: TimeInterval
    /// The server cancels a statement running longer (`.busy`), seconds; a server that has not
    /// answered one second after it counts as gone (`.unavailable`, connection replaced).
    public var statementTimeout: TimeInterval
    /// How long schema migrations at start-up may take, waiting for another node's included.
    public var migrationTimeout: TimeInterval
    /// Idle seconds before TCP keepalive probes start on a connection.
    public var keepaliveIdle: TimeInterval
    /// Seconds between TCP keepalive probes.
    public var keepaliveInterval: TimeInterval
    /// Unanswered keepalive probes after which the kernel drops the connection.
    public var keepaliveCount: Int
    /// `application_name` shown in `pg_stat_activity`.
    public var applicationName: String

    /// Defaults for the database at `url`.
    public init(
      url: String, poolSize: Int = 8, poolTimeout: TimeInterval = 5, connectTimeout: TimeInterval = 5,
      statementTimeout: TimeInterval = 10, migrationTimeout: TimeInterval = 120,
      keepaliveIdle: TimeInterval = 30, keepaliveInterval: TimeInterval = 10, keepaliveCount: Int = 3,
      applicationName: String = "attachd"
    ) {
      self.url = url
      self.poolSize = poolSize
      self.poolTimeout = poolTimeout
      self.connectTimeout = connectTimeout
      self.statementTimeout = statementTimeout
      self.migrationTimeout = migrationTimeout
      self.keepaliveIdle = keepaliveIdle
      self.keepaliveInterval = keepaliveInterval
      self.keepaliveCount = keepaliveCount
      self.applicationName = applicationName
    }

    /// Throws `.invalidArgument` for settings that cannot work; the message never holds the password.
    public func validate() throws {
      guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
        throw StorageError(.invalidArgument, "index.postgres.url is not a postgresql:// URI")
      }
      _ = try PostgresURL(url)
      guard (1...1_000).contains(poolSize) else {
        throw StorageError(.invalidArgument, "PostgreSQL pool size \(poolSize) is not in 1…1000")
      }
      let durations = [
        ("pool timeout", poolTimeout), ("connect timeout", connectTimeout),
        ("statement timeout", statementTimeout), ("migration timeout", migrationTimeout),
        ("keepalive idle", keepaliveIdle), ("keepalive interval", keepaliveInterval),
      ]
      for (name, value) in durations where !(value.isFinite && value >= 0.001 && value <= 86_400) {
        throw StorageError(.invalidArgument, "PostgreSQL \(name) \(value) s is not in 0.001…86400")
      }
      guard (1...100).contains(keepaliveCount) else {
        throw StorageError(.invalidArgument, "PostgreSQL keepalive count \(keepaliveCount) is not in 1…100")
      }
      guard !applicationName.isEmpty, applicationName.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) else {
        throw StorageError(.invalidArgument, "PostgreSQL application name must be printable ASCII")
      }
    }

    /// The URL with its password replaced by `***`, for logs.
    public var redactedURL: String {
      (try? PostgresURL(url).redacted) ?? "postgresql://(unreadable URL, not shown)"
    }

    public var description: String {
      "PostgresIndex.Configuration(url: \(redactedURL), poolSize: \(poolSize), poolTimeout: \(poolTimeout), "
        + "connectTimeout: \(connectTimeout), statementTimeout: \(statementTimeout))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
      Mirror(
        self,
        children: [
          "url": redactedURL, "poolSize": poolSize, "poolTimeout": poolTimeout,
          "connectTimeout": connectTimeout,
          "statementTimeout": statementTimeout, "migrationTimeout": migrationTimeout,
          "keepaliveIdle": keepaliveIdle, "keepaliveInterval": keepaliveInterval,
          "keepaliveCount": keepaliveCount,
          "applicationName": applicationName,
        ])
    }

    /// libpq keyword/value pairs: the URL (expanded by libpq) first, then the settings that override it.
    func connectionParameters(url parsed: PostgresURL) -> [(String, String)] {
      func milliseconds(_ seconds: TimeInterval) -> String { String(Int((seconds * 1_000).rounded(.up))) }
      func wholeSeconds(_ seconds: TimeInterval) -> String { String(max(1, Int(seconds.rounded(.up)))) }
      // The server cancels a statement after statement_timeout; a transaction left open by a
      // node that hung mid-sweep is ended after idle_in_transaction_session_timeout, so its row
      // locks cannot block the other nodes for long.
      let idleInTransaction = max(60, statementTimeout * 6)
      var options = parsed.options.map { $0 + " " } ?? ""
      options +=
        "-c statement_timeout=\(milliseconds(statementTimeout)) "
        + "-c idle_in_transaction_session_timeout=\(milliseconds(idleInTransaction))"
      return [
        ("dbname", url),
        // libpq's own deadline backs up ours (it counts whole seconds, at least 2).
        ("connect_timeout", wholeSeconds(connectTimeout)),
        ("keepalives", "1"),
        ("keepalives_idle", wholeSeconds(keepaliveIdle)),
        ("keepalives_interval", wholeSeconds(keepaliveInterval)),
        ("keepalives_count", String(keepaliveCount)),
        ("application_name", applicationName),
        ("options", options),
      ]
    }
  }
}

/// A libpq URI taken apart by libpq itself, for redaction and for the password to scrub from messages.
struct PostgresURL: Sendable {
  /// Every keyword libpq found set in the URI, with its value.
  let values: [String: String]

  init(_ url: String) throws {
    guard !url.utf8.contains(0) else {
      throw StorageError(.invalidArgument, "PostgreSQL URL holds a NUL byte")
    }
    try DelayedLibrary.pq()
    var message: UnsafeMutablePointer<CChar>?
    guard let options = PQconninfoParse(url, &message) else {
      // libpq's message can quote part of the URL (a bad percent-escape in the password).
      if let message { PQfreemem(message) }
      throw StorageError(.invalidArgument, "PostgreSQL URL cannot be parsed by libpq")
    }
    defer { PQconninfoFree(options) }
    var values: [String: String] = [:]
    var option = options
    while let keyword = option.pointee.keyword {
      if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
      option += 1
    }
    self.values = values
  }

  /// The `options` (server command-line settings) the URI sets, if any.
  var options: String? { values["options"].flatMap { $0.isEmpty ? nil : $0 } }

  /// The password the URI carries, if any.
  var password: String? { values["password"].flatMap { $0.isEmpty ? nil : $0 } }

  /// `postgresql://user:***@host:port/database?other=settings`, without the password.
  var redacted: String {
    var text = "postgresql://"
    if let user = values["user"] {
      text += user + (password == nil ? "" : ":***") + "@"
    } else if password != nil {
      text += ":***@"
    }
    text += values["host"] ?? values["hostaddr"] ?? ""
    if let port = values["port"] { text += ":" + port }
    text += "/" + (values["dbname"] ?? "")
    let shown = values.keys.filter {
      !["user", "password", "host", "hostaddr", "port", "dbname"].contains($0)
    }
    let query = shown.sorted().map { "\($0)=\(values[$0] ?? "")" }.joined(separator: "&")
    return query.isEmpty ? text : text + "?" + query
  }

  /// `message` with every occurrence of the password replaced by `***`.
  func scrub(_ message: String) -> String {
    guard let password else { return message }
    var scrubbed = message.replacingOccurrences(of: password, with: "***")
    // The percent-encoded spelling, as it appears in the URI itself.
    if let encoded = password.addingPercentEncoding(withAllowedCharacters: .alphanumerics),
      encoded != password
    {
      scrubbed = scrubbed.replacingOccurrences(of: encoded, with: "***")
    }
    return scrubbed
  }
}
