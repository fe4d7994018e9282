import Foundation
import Storage

extension Application.Configuration {
  /// Where storage is, for start-up messages and logs: never a credential.
  public var storageSummary: String {
    var summary = "blobs: " + storage.backend.rawValue
    summary +=
      storage.backend == .s3 ? " \(storage.s3.endpoint)/\(storage.s3.bucket)" : " \(storage.dataDirectory)"
    summary += ", index: " + index.backend.rawValue
    if index.backend == .postgres { summary += " " + index.redactedURL }
    return summary
  }
}

extension Application {
  /// Where blobs live: the data directory (`filesystem`) or an S3-compatible bucket (`s3`).
  public enum BlobBackend: String, Sendable, Equatable, CaseIterable {
    case filesystem
    case s3
  }

  /// Where the index lives: SQLite in the data directory, or a PostgreSQL server.
  public enum IndexBackend: String, Sendable, Equatable, CaseIterable {
    case sqlite
    case postgres
  }

  /// `storage.s3.*`: the bucket blobs and uploads go to, and how long and how often to try.
  ///
  /// `description` and `dump` never show the access key id or the secret.
  public struct S3Options: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// `http(s)://host[:port]`; requests are path-style.
    public var endpoint = ""
    public var bucket = ""
    public var region = "us-east-1"
    /// A credential: never logged.
    public var accessKeyId = ""
    /// A credential: never logged.
    public var secretAccessKey = ""
    /// Seconds to connect (TCP and TLS) per attempt.
    public var connectTimeout = 2.0
    /// Seconds without a byte moving, per attempt.
    public var idleTimeout = 10.0
    /// Seconds for a whole attempt (a 5 MiB part included).
    public var requestTimeout = 60.0
    /// Attempts per request (network failures, timeouts and 5xx are retried).
    public var maxAttempts = 3

    public init() {}

    /// The client configuration these options describe.
    public func clientConfiguration() -> S3Client.Configuration {
      S3Client.Configuration(
        endpoint: endpoint, bucket: bucket, region: region, accessKeyId: accessKeyId,
        secretAccessKey: secretAccessKey,
        timeouts: S3Client.Timeouts(connect: connectTimeout, idle: idleTimeout, request: requestTimeout),
        retry: S3Client.Retry(maxAttempts: maxAttempts))
    }

    public func validate() throws(ConfigurationError) {
      for (name, value) in [
        ("endpoint", endpoint), ("bucket", bucket), ("accessKeyId", accessKeyId),
        ("secretAccessKey", secretAccessKey),
      ] where value.isEmpty {
        throw ConfigurationError("storage.s3.\(name) must be set when storage.backend is s3")
      }
      do {
        try clientConfiguration().validate()
      } catch {
        // The client's messages name settings, never a credential's value.
        throw ConfigurationError("storage.\((error as? StorageError)?.detail ?? "s3: invalid settings")")
      }
    }

    public var description: String {
      "S3Options(endpoint: \(endpoint), bucket: \(bucket), region: \(region), credentials: <redacted>, "
        + "timeouts: \(connectTimeout)/\(idleTimeout)/\(requestTimeout) s, maxAttempts: \(maxAttempts))"
    }

    public var customMirror: Mirror {
      Mirror(
        self,
        children: [
          "endpoint": endpoint, "bucket": bucket, "region": region, "accessKeyId": "<redacted>",
          "secretAccessKey": "<redacted>", "connectTimeout": connectTimeout, "idleTimeout": idleTimeout,
          "requestTimeout": requestTimeout, "maxAttempts": maxAttempts,
        ])
    }
  }

  /// `index.*`: which index, and how to reach PostgreSQL.
  ///
  /// `description` and `dump` show the URL with its password as `***`.
  public struct IndexOptions: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public var backend = IndexBackend.sqlite
    /// A libpq URI (it holds the password: never logged).
    public var postgresURL = ""
    /// Connections each node holds at most.
    public var postgresPoolSize = 8
    /// Seconds to open a connection.
    public var postgresConnectTimeout = 5.0
    /// Seconds a statement may run (the server cancels it).
    public var postgresStatementTimeout = 10.0

    public init() {}

    /// The index configuration these options describe.
    public func postgresConfiguration() -> PostgresIndex.Configuration {
      PostgresIndex.Configuration(
        url: postgresURL, poolSize: postgresPoolSize, connectTimeout: postgresConnectTimeout,
        statementTimeout: postgresStatementTimeout)
    }

    public func validate() throws(ConfigurationError) {
      guard backend == .postgres else { return }
      guard !postgresURL.isEmpty else {
        throw ConfigurationError("index.postgres.url must be set when index.backend is postgres")
      }
      do {
        try postgresConfiguration().validate()
      } catch {
        // PostgresIndex's messages never quote the URL's password.
        throw ConfigurationError("index.postgres: \((error as? StorageError)?.detail ?? "invalid settings")")
      }
    }

    public var description: String {
      "IndexOptions(backend: \(backend.rawValue), postgresURL: \(redactedURL), poolSize: \(postgresPoolSize))"
    }

    /// The URL without its password, for logs.
    public var redactedURL: String {
      postgresURL.isEmpty ? "" : PostgresIndex.Configuration(url: postgresURL).redactedURL
    }

    public var customMirror: Mirror {
      Mirror(
        self,
        children: [
          "backend": backend, "postgresURL": redactedURL, "postgresPoolSize": postgresPoolSize,
          "postgresConnectTimeout": postgresConnectTimeout,
          "postgresStatementTimeout": postgresStatementTimeout,
        ])
    }
  }
}
