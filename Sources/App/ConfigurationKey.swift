import Foundation

/// One setting: its place in the JSON file, its environment variable, its flag and default.
///
/// `ConfigurationKey.all` is the single list the loader, `attachd serve --help` and the
/// README table are made from; a new setting is one more entry there.
public struct ConfigurationKey: Sendable {
  public typealias Configuration = Application.Configuration
  typealias Setter = @Sendable (inout Configuration, ConfigurationValue) throws(ConfigurationError) -> Void

  /// Section and name in the JSON file, e.g. `server.port`.
  public let path: String
  /// Environment variable, e.g. `ATTACHD_PORT`.
  public let environment: String
  /// Command-line flag of `attachd serve`, e.g. `--port`, when there is one.
  public let flag: String?
  /// The default, as text.
  public let defaultText: String
  /// One line for help texts.
  public let summary: String
  let set: Setter

  /// Every setting, in the order help texts list them.
  public static let all: [ConfigurationKey] = coreKeys + uploadKeys + pipelineKeys + clientKeys

  /// The server, storage, auth and limit settings.
  static let coreKeys: [ConfigurationKey] = [
    .text(
      "server.host", env: "ATTACHD_HOST", flag: "--host", summary: "address to listen on",
      \.server.host),
    .integer(
      "server.port", env: "ATTACHD_PORT", flag: "--port", summary: "TCP port (0 = any free port)",
      range: 0...65535, \.server.port),
    .integer(
      "server.eventLoops", env: "ATTACHD_EVENT_LOOPS", flag: nil,
      summary: "event loop threads (0 = one per core)",
      range: 0...1024, \.server.eventLoops),
    .integer(
      "server.workerThreads", env: "ATTACHD_WORKER_THREADS", flag: nil,
      summary: "threads for image work (0 = one per core, two per core on S3)", range: 0...1024,
      \.server.workerThreads),
    .integer(
      "server.workerQueueLength", env: "ATTACHD_WORKER_QUEUE_LENGTH", flag: nil,
      summary: "jobs waiting for a worker before 503 + Retry-After", range: 0...1_000_000,
      \.server.workerQueueLength),
    .integer(
      "server.maxConnections", env: "ATTACHD_MAX_CONNECTIONS", flag: nil, summary: "open connections at most",
      range: 1...10_000_000, \.server.maxConnections),
    .seconds(
      "server.headerTimeout", env: "ATTACHD_HEADER_TIMEOUT", flag: nil,
      summary: "seconds for a whole request head to arrive (→ 408)", \.server.headerTimeout),
    .seconds(
      "server.bodyIdleTimeout", env: "ATTACHD_BODY_IDLE_TIMEOUT", flag: nil,
      summary: "longest silence in a request body, seconds (→ 408)", \.server.bodyIdleTimeout),
    .integer(
      "server.minBodyRate", env: "ATTACHD_MIN_BODY_RATE", flag: nil,
      summary: "slowest request body, bytes/s over each server.minBodyRateWindow (0 = none; → 408)",
      range: 0...1_073_741_824, \.server.minBodyRate),
    .seconds(
      "server.minBodyRateWindow", env: "ATTACHD_MIN_BODY_RATE_WINDOW", flag: nil,
      summary: "seconds server.minBodyRate is averaged over", \.server.minBodyRateWindow),
    .seconds(
      "server.keepAliveTimeout", env: "ATTACHD_KEEP_ALIVE_TIMEOUT", flag: nil,
      summary: "seconds an idle kept-alive connection stays open", \.server.keepAliveTimeout),
    .seconds(
      "server.writeTimeout", env: "ATTACHD_WRITE_TIMEOUT", flag: nil,
      summary: "seconds a response write may stall before the connection is dropped", \.server.writeTimeout),
    .seconds(
      "server.lingerTimeout", env: "ATTACHD_LINGER_TIMEOUT", flag: nil,
      summary: "seconds to drain unread request bytes after an early answer, before closing",
      \.server.lingerTimeout),
    .seconds(
      "server.drainDeadline", env: "ATTACHD_DRAIN_DEADLINE", flag: nil,
      summary: "seconds in-flight requests get after SIGTERM", allowZero: true, \.server.drainDeadline),
    .integer(
      "server.maxRequestLineBytes", env: "ATTACHD_MAX_REQUEST_LINE_BYTES", flag: nil,
      summary: "longest request line (→ 414)", range: 64...1_048_576, \.server.maxRequestLineBytes),
    .integer(
      "server.maxHeaderBytes", env: "ATTACHD_MAX_HEADER_BYTES", flag: nil,
      summary: "largest header block (→ 431)",
      range: 256...16_777_216, \.server.maxHeaderBytes),
    .integer(
      "server.maxHeaderFields", env: "ATTACHD_MAX_HEADER_FIELDS", flag: nil,
      summary: "most header fields (→ 431)",
      range: 1...10_000, \.server.maxHeaderFields),
    .integer(
      "server.listenBacklog", env: "ATTACHD_LISTEN_BACKLOG", flag: nil, summary: "listen(2) backlog",
      range: 1...65535, \.server.listenBacklog),
    .text(
      "storage.dataDir", env: "ATTACHD_DATA_DIR", flag: "--data-dir",
      summary: "directory for attachments and the index", \.storage.dataDirectory),
    ConfigurationKey(
      path: "storage.backend", environment: "ATTACHD_STORAGE_BACKEND", flag: nil, defaultText: "filesystem",
      summary: "where blobs go: filesystem (storage.dataDir) or s3 (storage.s3.*)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.storage.backend = try value.choice(of: Application.BlobBackend.self)
      }),
    .text(
      "storage.s3.endpoint", env: "ATTACHD_S3_ENDPOINT", flag: nil,
      summary: "S3 endpoint, http(s)://host[:port] (path-style requests)", \.storage.s3.endpoint),
    .text(
      "storage.s3.bucket", env: "ATTACHD_S3_BUCKET", flag: nil, summary: "S3 bucket", \.storage.s3.bucket),
    .text(
      "storage.s3.region", env: "ATTACHD_S3_REGION", flag: nil, summary: "region signed for",
      \.storage.s3.region),
    .secret(
      "storage.s3.accessKeyId", env: "ATTACHD_S3_ACCESS_KEY_ID", summary: "S3 access key id (never logged)",
      \.storage.s3.accessKeyId),
    .secret(
      "storage.s3.secretAccessKey", env: "ATTACHD_S3_SECRET_ACCESS_KEY",
      summary: "S3 secret access key (never logged)", \.storage.s3.secretAccessKey),
    .seconds(
      "storage.s3.connectTimeout", env: "ATTACHD_S3_CONNECT_TIMEOUT", flag: nil,
      summary: "seconds to connect to S3, per attempt", \.storage.s3.connectTimeout),
    .seconds(
      "storage.s3.idleTimeout", env: "ATTACHD_S3_IDLE_TIMEOUT", flag: nil,
      summary: "seconds an S3 transfer may stall, per attempt", \.storage.s3.idleTimeout),
    .seconds(
      "storage.s3.requestTimeout", env: "ATTACHD_S3_REQUEST_TIMEOUT", flag: nil,
      summary: "seconds for one whole S3 attempt", \.storage.s3.requestTimeout),
    .integer(
      "storage.s3.maxAttempts", env: "ATTACHD_S3_MAX_ATTEMPTS", flag: nil,
      summary: "attempts per S3 request (network errors, timeouts and 5xx are retried)", range: 1...20,
      \.storage.s3.maxAttempts),
    ConfigurationKey(
      path: "index.backend", environment: "ATTACHD_INDEX_BACKEND", flag: nil, defaultText: "sqlite",
      summary: "where the index goes: sqlite (storage.dataDir) or postgres (index.postgres.url)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.index.backend = try value.choice(of: Application.IndexBackend.self)
      }),
    .secret(
      "index.postgres.url", env: "ATTACHD_POSTGRES_URL",
      summary: "libpq URI postgresql://user:password@host:5432/db (never logged; the password shows as ***)",
      \.index.postgresURL),
    .integer(
      "index.postgres.poolSize", env: "ATTACHD_POSTGRES_POOL_SIZE", flag: nil,
      summary: "PostgreSQL connections per node at most", range: 1...1000, \.index.postgresPoolSize),
    .seconds(
      "index.postgres.connectTimeout", env: "ATTACHD_POSTGRES_CONNECT_TIMEOUT", flag: nil,
      summary: "seconds to open a PostgreSQL connection", \.index.postgresConnectTimeout),
    .seconds(
      "index.postgres.statementTimeout", env: "ATTACHD_POSTGRES_STATEMENT_TIMEOUT", flag: nil,
      summary: "seconds a statement may run before the server cancels it", \.index.postgresStatementTimeout),
    ConfigurationKey(
      path: "auth.apiKeys", environment: "ATTACHD_API_KEYS", flag: nil, defaultText: "none",
      summary: "comma-separated tenant:key pairs (JSON: array of \"tenant:key\" strings)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.auth.apiKeys = try APIKey.parseList(value.listText())
      }),
    ConfigurationKey(
      path: "auth.keys", environment: "ATTACHD_AUTH_KEYS", flag: nil, defaultText: "none",
      summary: "hashed API keys: JSON array of {tenant, scopes, key_sha256} (see attachd keys new)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.auth.keys = try HashedKey.parseList(value)
      }),
    ConfigurationKey(
      path: "auth.tokenKeys", environment: "ATTACHD_TOKEN_KEYS", flag: nil, defaultText: "none",
      summary:
        "upload-token issuer keys: JSON array of {tenant, iss, kid?, alg, public_key_pem | secret_env | secret_file}",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.auth.tokens.keys = try TokenKey.parseList(value)
      }),
    .seconds(
      "auth.tokenMaxTTL", env: "ATTACHD_TOKEN_MAX_TTL", flag: nil,
      summary: "longest upload-token lifetime (exp - iat), seconds", \.auth.tokens.maxTTLSeconds),
    .seconds(
      "auth.tokenLeeway", env: "ATTACHD_TOKEN_LEEWAY", flag: nil,
      summary: "clock skew tolerated for a token's exp, nbf and iat, seconds", allowZero: true,
      \.auth.tokens.leewaySeconds),
    ConfigurationKey(
      path: "limits.requestsPerSecond", environment: "ATTACHD_RATE_LIMIT", flag: nil, defaultText: "10",
      summary: "token-bucket refill per key, requests/s (0 = off)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        let number = try value.number()
        guard number >= 0, number.isFinite else { throw ConfigurationError("must be 0 or more") }
        config.limits.rate.requestsPerSecond = number
      }),
    .integer(
      "limits.burst", env: "ATTACHD_RATE_BURST", flag: nil, summary: "requests one key may make at once",
      range: 1...1_000_000, \.limits.rate.burst),
    .integer(
      "limits.maxTrackedKeys", env: "ATTACHD_RATE_TRACKED_KEYS", flag: nil,
      summary: "rate-limit buckets kept at most", range: 1...10_000_000, \.limits.rate.maxTrackedKeys),
    .integer(
      "limits.concurrentUploadsPerKey", env: "ATTACHD_CONCURRENT_UPLOADS_PER_KEY", flag: nil,
      summary: "uploads one key may have in flight (0 = off)", range: 0...10_000,
      \.limits.uploads.maxConcurrentUploadsPerKey),
    ConfigurationKey(
      path: "limits.uploadRetryAfter", environment: "ATTACHD_UPLOAD_RETRY_AFTER", flag: nil, defaultText: "1",
      summary: "Retry-After seconds of the over-cap 429",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        let number = try value.integer()
        guard (1...3600).contains(number) else { throw ConfigurationError("must be 1…3600, not \(number)") }
        config.limits.uploads.retryAfterSeconds = number
        config.limits.userUploads.retryAfterSeconds = number
      }),
    ConfigurationKey(
      path: "limits.userRequestsPerSecond", environment: "ATTACHD_USER_RATE_LIMIT", flag: nil,
      defaultText: "10",
      summary: "token-bucket refill per token user (tenant, sub), requests/s (0 = off)",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        let number = try value.number()
        guard number >= 0, number.isFinite else { throw ConfigurationError("must be 0 or more") }
        config.limits.userRate.requestsPerSecond = number
      }),
    .integer(
      "limits.userBurst", env: "ATTACHD_USER_RATE_BURST", flag: nil,
      summary: "requests one token user may make at once", range: 1...1_000_000, \.limits.userRate.burst),
    .integer(
      "limits.concurrentUploadsPerUser", env: "ATTACHD_CONCURRENT_UPLOADS_PER_USER", flag: nil,
      summary: "uploads one token user may have in flight (0 = off)", range: 0...10_000,
      \.limits.userUploads.maxConcurrentUploadsPerKey),
    .integer(
      "limits.userDailyFiles", env: "ATTACHD_USER_DAILY_FILES", flag: nil,
      summary: "files one token user may store per UTC day (0 = off)", range: 0...100_000_000,
      \.limits.userQuota.dailyFiles),
    .integer(
      "limits.userDailyBytes", env: "ATTACHD_USER_DAILY_BYTES", flag: nil,
      summary: "upload bytes one token user may send per UTC day (0 = off)", range: 0...(1 << 50),
      \.limits.userQuota.dailyBytes),
    ConfigurationKey(
      path: "signing.secret", environment: "ATTACHD_SIGNING_SECRET", flag: nil,
      defaultText: "random per process", summary: "HMAC key for signed links, at least 32 characters",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        // Empty means unset (compose files pass `${ATTACHD_SIGNING_SECRET:-}`).
        let text = try value.text()
        config.signing.secret = text.isEmpty ? nil : text
      }),
    .integer(
      "signing.linkTTL", env: "ATTACHD_SIGNED_LINK_TTL", flag: nil, summary: "lifetime of a signed link, s",
      range: 1...2_592_000, \.signing.ttlSeconds),
  ]

  /// The pipeline, sandbox, retention and log settings.
  static let pipelineKeys: [ConfigurationKey] = [
    .seconds(
      "pipeline.deadline", env: "ATTACHD_PIPELINE_DEADLINE", flag: nil,
      summary: "seconds one image may take in the pipeline (→ 503 deadline_exceeded)",
      \.attachments.pipelineDeadline),
    .integer(
      "pipeline.hevcThreads", env: "ATTACHD_HEVC_THREADS", flag: nil,
      summary: "libavcodec threads per HEIC picture on the HEVC path", range: 1...64,
      \.attachments.hevcThreads),
    .integer(
      "sandbox.memoryLimit", env: "ATTACHD_SANDBOX_MEMORY_LIMIT", flag: nil,
      summary: "address space of one decoding child, bytes (→ 413 decoder_memory_limit)",
      range: (64 << 20)...(1 << 40), \.sandbox.memoryLimit),
    .integer(
      "sandbox.cpuSeconds", env: "ATTACHD_SANDBOX_CPU_SECONDS", flag: nil,
      summary: "CPU seconds of one decoding child (→ 503 deadline_exceeded)", range: 1...3600,
      \.sandbox.cpuSeconds),
    .text(
      "sandbox.helper", env: "ATTACHD_SANDBOX_HELPER", flag: nil,
      summary: "the sandbox helper executable (empty: attachd itself)", \.sandbox.helper),
    .integer(
      "attachments.cacheMaxAge", env: "ATTACHD_CACHE_MAX_AGE", flag: nil,
      summary: "Cache-Control max-age of a served image, s", range: 0...31_536_000, \.attachments.cacheMaxAge),
    .integer(
      "storage.retention", env: "ATTACHD_RETENTION", flag: nil,
      summary: "seconds an attachment lives (default 30 days)", range: 1...(100 * 365 * 86_400),
      \.attachments.retention),
    ConfigurationKey(
      path: "storage.tenantRetention", environment: "ATTACHD_TENANT_RETENTION", flag: nil,
      defaultText: "none",
      summary: "per-tenant retention in seconds: JSON object {\"tenant\": seconds}",
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config.attachments.tenantRetention = try value.tenantSeconds()
      }),
    .integer(
      "storage.sweepInterval", env: "ATTACHD_SWEEP_INTERVAL", flag: nil,
      summary: "seconds between sweeps of expired attachments", range: 1...604_800,
      \.attachments.sweepInterval),
    .text(
      "log.access", env: "ATTACHD_ACCESS_LOG", flag: "--access-log",
      summary: "access log: stdout, stderr, off or a file path", \.log.access),
  ]

  /// The key whose JSON path is `path`.
  public static func named(_ path: String) -> ConfigurationKey? { all.first { $0.path == path } }

  static func text(
    _ path: String, env: String, flag: String?, summary: String,
    _ field: WritableKeyPath<Configuration, String> & Sendable
  ) -> ConfigurationKey {
    ConfigurationKey(
      path: path, environment: env, flag: flag, defaultText: Configuration()[keyPath: field],
      summary: summary,
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config[keyPath: field] = try value.text()
      })
  }

  /// A credential or a URL holding one: its default shows as "none", and no message ever
  /// repeats its value.
  static func secret(
    _ path: String, env: String, summary: String, _ field: WritableKeyPath<Configuration, String> & Sendable
  ) -> ConfigurationKey {
    ConfigurationKey(
      path: path, environment: env, flag: nil, defaultText: "none", summary: summary,
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        config[keyPath: field] = try value.text()
      })
  }

  static func integer(
    _ path: String, env: String, flag: String?, summary: String, range: ClosedRange<Int>,
    _ field: WritableKeyPath<Configuration, Int> & Sendable
  ) -> ConfigurationKey {
    ConfigurationKey(
      path: path, environment: env, flag: flag, defaultText: String(Configuration()[keyPath: field]),
      summary: summary,
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        let number = try value.integer()
        guard range.contains(number) else {
          throw ConfigurationError("must be \(range.lowerBound)…\(range.upperBound), not \(number)")
        }
        config[keyPath: field] = number
      })
  }

  static func secondsText(_ value: Double) -> String {
    value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
  }

  static func seconds(
    _ path: String, env: String, flag: String?, summary: String, allowZero: Bool = false,
    _ field: WritableKeyPath<Configuration, Double> & Sendable
  ) -> ConfigurationKey {
    ConfigurationKey(
      path: path, environment: env, flag: flag,
      defaultText: Self.secondsText(Configuration()[keyPath: field]),
      summary: summary,
      set: { (config: inout Configuration, value: ConfigurationValue) throws(ConfigurationError) in
        let number = try value.number()
        guard number > 0 || (allowZero && number == 0), number.isFinite else {
          throw ConfigurationError(
            allowZero ? "must be 0 or more seconds" : "must be a positive number of seconds")
        }
        config[keyPath: field] = number
      })
  }
}

/// A raw value before it is typed: text from the environment or a flag, or a JSON value.
enum ConfigurationValue: Sendable {
  case text(String)
  case json(JSONValue)

  func text() throws(ConfigurationError) -> String {
    switch self {
    case .text(let s): return s
    case .json(.string(let s)): return s
    case .json: throw ConfigurationError("expected a string")
    }
  }

  /// One of an enumeration's raw values, e.g. `filesystem` or `s3`.
  func choice<Choice: RawRepresentable & CaseIterable>(of type: Choice.Type) throws(ConfigurationError)
    -> Choice
  where Choice.RawValue == String {
    let text = try self.text().trimmingASCIIWhitespace()
    guard let choice = Choice(rawValue: String(text)) else {
      let names = Choice.allCases.map(\.rawValue).joined(separator: " or ")
      throw ConfigurationError("must be \(names), not \"\(text.prefix(40))\"")
    }
    return choice
  }

  func integer() throws(ConfigurationError) -> Int {
    switch self {
    case .text(let s):
      guard let n = Int(s.trimmingASCIIWhitespace()) else {
        throw ConfigurationError("expected an integer, got \"\(s)\"")
      }
      return n
    case .json(.number(let d)):
      guard let n = Int(exactly: d) else { throw ConfigurationError("expected an integer, got \(d)") }
      return n
    case .json: throw ConfigurationError("expected an integer")
    }
  }

  func boolean() throws(ConfigurationError) -> Bool {
    switch self {
    case .text(let s):
      switch s.trimmingASCIIWhitespace().lowercased() {
      case "true", "1", "yes", "on": return true
      case "false", "0", "no", "off": return false
      default: throw ConfigurationError("expected true or false, got \"\(s)\"")
      }
    case .json(.bool(let b)): return b
    case .json: throw ConfigurationError("expected true or false")
    }
  }

  func number() throws(ConfigurationError) -> Double {
    switch self {
    case .text(let s):
      guard let n = Double(s.trimmingASCIIWhitespace()) else {
        throw ConfigurationError("expected a number, got \"\(s)\"")
      }
      return n
    case .json(.number(let d)): return d
    case .json: throw ConfigurationError("expected a number")
    }
  }

  /// A JSON object of tenant → seconds (from a file, or as JSON text from the environment).
  func tenantSeconds() throws(ConfigurationError) -> [String: Int] {
    let members = try tenantObject()
    var result: [String: Int] = [:]
    for (tenant, value) in members {
      guard case .number(let d) = value, let n = Int(exactly: d), n > 0 else {
        throw ConfigurationError("\(tenant): expected a positive whole number of seconds")
      }
      result[tenant] = n
    }
    return result
  }

  /// Comma-separated text, or a JSON array of strings joined with commas.
  func listText() throws(ConfigurationError) -> String {
    guard case .json(.array(let array)) = self else { return try text() }
    var parts: [String] = []
    for element in array {
      guard case .string(let s) = element, !s.contains(",") else {
        throw ConfigurationError("expected an array of strings without commas")
      }
      parts.append(s)
    }
    return parts.joined(separator: ",")
  }
}

/// A parsed JSON value (the configuration file).
enum JSONValue: Sendable, Decodable, Equatable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  init(from decoder: any Decoder) throws {
    let c = try decoder.singleValueContainer()
    // Bool first: Foundation's decoder reads only true/false as Bool, never 0/1.
    if c.decodeNil() {
      self = .null
    } else if let b = try? c.decode(Bool.self) {
      self = .bool(b)
    } else if let n = try? c.decode(Double.self) {
      self = .number(n)
    } else if let s = try? c.decode(String.self) {
      self = .string(s)
    } else if let a = try? c.decode([JSONValue].self) {
      self = .array(a)
    } else {
      self = .object(try c.decode([String: JSONValue].self))
    }
  }
}
