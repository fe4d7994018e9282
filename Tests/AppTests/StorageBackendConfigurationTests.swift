import Foundation
import Testing

@testable import App

/// `storage.backend`, `storage.s3.*`, `index.backend` and `index.postgres.*`: layered like every
/// setting, checked before anything is opened, and never repeating a credential anywhere.
@Suite struct StorageBackendConfigurationTests {
  static let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
  static let accessKey = "AKIAIOSFODNN7EXAMPLE"
  static let password = "pg-Pa55word-that-must-never-show"
  static let url = "postgresql://attachd:\(password)@db.internal:5432/attachd?sslmode=require"

  static let environment = [
    "ATTACHD_STORAGE_BACKEND": "s3", "ATTACHD_S3_ENDPOINT": "http://seaweedfs:8333",
    "ATTACHD_S3_BUCKET": "attachd",
    "ATTACHD_S3_REGION": "eu-west-1", "ATTACHD_S3_ACCESS_KEY_ID": accessKey,
    "ATTACHD_S3_SECRET_ACCESS_KEY": secret, "ATTACHD_INDEX_BACKEND": "postgres", "ATTACHD_POSTGRES_URL": url,
  ]

  static func load(_ environment: [String: String], file: String? = nil) throws -> Application.Configuration {
    var options = ServeOptions()
    if let file {
      let path = try LiveTesting.temporaryDirectory() + "/attachd.json"
      try file.write(toFile: path, atomically: true, encoding: .utf8)
      options.configPath = path
    }
    return try ConfigurationLoader.load(
      options: options, environment: environment, fileExists: { _ in false })
  }

  /// The configuration error `environment` (and `file`) give, as text.
  static func failure(_ environment: [String: String], file: String? = nil) -> String? {
    do {
      _ = try load(environment, file: file)
      return nil
    } catch {
      return String(describing: error)
    }
  }

  @Test func theEmbeddedBackendsAreTheDefault() throws {
    let config = try Self.load([:])
    #expect(config.storage.backend == .filesystem && config.index.backend == .sqlite)
  }

  @Test func theEnvironmentSelectsS3AndPostgres() throws {
    var environment = Self.environment
    environment["ATTACHD_S3_IDLE_TIMEOUT"] = "7.5"
    environment["ATTACHD_POSTGRES_POOL_SIZE"] = "12"
    let config = try Self.load(environment)
    #expect(config.storage.backend == .s3 && config.index.backend == .postgres)
    let client = config.storage.s3.clientConfiguration()
    #expect(
      client.endpoint == "http://seaweedfs:8333" && client.bucket == "attachd" && client.region == "eu-west-1"
    )
    #expect(client.accessKeyId == Self.accessKey && client.secretAccessKey == Self.secret)
    #expect(client.timeouts.idle == 7.5 && client.timeouts.connect == 2 && client.retry.maxAttempts == 3)
    let postgres = config.index.postgresConfiguration()
    #expect(postgres.url == Self.url && postgres.poolSize == 12)
  }

  @Test func theFileTakesNestedSections() throws {
    let config = try Self.load(
      [:],
      file: """
        {"storage": {"backend": "s3", "s3": {"endpoint": "https://s3.example.com", "bucket": "att",
                     "accessKeyId": "\(Self.accessKey)", "secretAccessKey": "\(Self.secret)", "maxAttempts": 5}},
         "index": {"backend": "postgres", "postgres": {"url": "\(Self.url)", "statementTimeout": 3}}}
        """)
    #expect(config.storage.s3.endpoint == "https://s3.example.com" && config.storage.s3.maxAttempts == 5)
    #expect(config.index.postgresURL == Self.url && config.index.postgresStatementTimeout == 3)
    // A misspelt nested key is an error like any other.
    let typo = Self.failure([:], file: #"{"storage": {"s3": {"bukket": "att"}}}"#)
    #expect(typo?.contains("unknown key storage.s3.bukket") == true, "\(typo ?? "")")
  }

  @Test(
    arguments: [
      (["ATTACHD_STORAGE_BACKEND": "minio"], "ATTACHD_STORAGE_BACKEND: must be filesystem or s3"),
      (["ATTACHD_INDEX_BACKEND": "mysql"], "ATTACHD_INDEX_BACKEND: must be sqlite or postgres"),
      (["ATTACHD_STORAGE_BACKEND": "s3"], "storage.s3.endpoint must be set"),
      (["ATTACHD_INDEX_BACKEND": "postgres"], "index.postgres.url must be set"),
      (["ATTACHD_INDEX_BACKEND": "postgres", "ATTACHD_POSTGRES_URL": url], "needs storage.backend s3"),
      (["ATTACHD_S3_MAX_ATTEMPTS": "0"], "ATTACHD_S3_MAX_ATTEMPTS: must be 1…20"),
    ] as [([String: String], String)])
  func unusableBackendSettingsStopStartUpNamingTheSetting(environment: [String: String], message: String) {
    let error = Self.failure(environment)
    #expect(error?.contains(message) == true, "\(error ?? "no error")")
  }

  @Test func noCredentialShowsInErrorsHelpOrDumps() throws {
    // Settings that are wrong next to the credentials: the messages name the setting only.
    var badEndpoint = Self.environment
    badEndpoint["ATTACHD_S3_ENDPOINT"] = "ftp://\(Self.accessKey):\(Self.secret)@host"
    var badURL = Self.environment
    badURL["ATTACHD_POSTGRES_URL"] = "postgresql://attachd:\(Self.password)@db/%zz"
    var badPool = Self.environment
    badPool["ATTACHD_POSTGRES_POOL_SIZE"] = "0"
    var texts = [badEndpoint, badURL, badPool].map { Self.failure($0) ?? "" }
    #expect(texts.allSatisfy { !$0.isEmpty })
    let config = try Self.load(Self.environment)
    var dumped = ""
    dump(config, to: &dumped)
    texts += [
      ServeOptions.help, dumped, String(describing: config), String(reflecting: config),
      config.storageSummary,
    ]
    for text in texts {
      for credential in [Self.secret, Self.accessKey, Self.password] {
        #expect(!text.contains(credential), "a credential leaked into: \(text)")
      }
    }
    #expect(dumped.contains("postgresql://attachd:***@db.internal:5432/attachd"))
    #expect(
      ServeOptions.help.contains("storage.s3.secretAccessKey  (ATTACHD_S3_SECRET_ACCESS_KEY; default none)"))
  }
}
