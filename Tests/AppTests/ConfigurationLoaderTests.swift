import Foundation
import Server
import TestSupport
import Testing

@testable import App

@Suite struct ConfigurationLoaderTests {
  /// Writes `json` to a fresh temporary file and returns its path.
  func configFile(_ json: String) throws -> String {
    let path = ScratchSpace.file("attachd-config", suffix: "json")
    try Data(json.utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  let noDefaultFile: (String) -> Bool = { _ in false }

  @Test func defaultsApplyWhenNothingIsGiven() throws {
    let config = try ConfigurationLoader.load(
      options: ServeOptions(), environment: [:], fileExists: noDefaultFile)
    #expect(config == Application.Configuration())
    #expect(config.server.host == "127.0.0.1")
    #expect(config.server.port == 8080)
    #expect(config.storage.dataDirectory == "./data")
    #expect(config.auth.apiKeys.isEmpty)
  }

  @Test func fileOverridesDefaultsEnvironmentOverridesFileFlagsOverrideEnvironment() throws {
    let path = try configFile(
      #"{"server": {"host": "127.0.0.2", "port": 9001}, "storage": {"dataDir": "/tmp/from-file"}}"#)
    let fileOnly = try ConfigurationLoader.load(
      options: ServeOptions(configPath: path), environment: [:], fileExists: noDefaultFile)
    #expect(fileOnly.server.host == "127.0.0.2")
    #expect(fileOnly.server.port == 9001)
    #expect(fileOnly.storage.dataDirectory == "/tmp/from-file")

    let environment = ["ATTACHD_PORT": "9002", "ATTACHD_DATA_DIR": "/tmp/from-env"]
    let withEnv = try ConfigurationLoader.load(
      options: ServeOptions(configPath: path), environment: environment, fileExists: noDefaultFile)
    #expect(withEnv.server.host == "127.0.0.2")
    #expect(withEnv.server.port == 9002)
    #expect(withEnv.storage.dataDirectory == "/tmp/from-env")

    let withFlags = try ConfigurationLoader.load(
      options: try ServeOptions.parse(["--config", path, "--port", "9003"]), environment: environment,
      fileExists: noDefaultFile)
    #expect(withFlags.server.host == "127.0.0.2")
    #expect(withFlags.server.port == 9003)
    #expect(withFlags.storage.dataDirectory == "/tmp/from-env")
  }

  @Test func configFileCanBeNamedByTheEnvironment() throws {
    let path = try configFile(#"{"server": {"port": 7070}}"#)
    let config = try ConfigurationLoader.load(
      options: ServeOptions(), environment: ["ATTACHD_CONFIG": path], fileExists: noDefaultFile)
    #expect(config.server.port == 7070)
  }

  @Test func theDefaultFileIsReadOnlyWhenItExists() throws {
    var asked: [String] = []
    _ = try ConfigurationLoader.load(options: ServeOptions(), environment: [:]) { path in
      asked.append(path)
      return false
    }
    #expect(asked == ["Config/attachd.json"])
  }

  @Test func theCommittedConfigFileLoads() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    var config = Application.Configuration()
    try ConfigurationLoader.applyFile(
      at: root.appendingPathComponent("Config/attachd.json").path, to: &config)
    try config.validate()
  }

  @Test func aMissingConfigFileIsAnError() {
    #expect(throws: ConfigurationError("/nonexistent/attachd.json: cannot read the configuration file")) {
      try ConfigurationLoader.load(
        options: ServeOptions(configPath: "/nonexistent/attachd.json"), environment: [:],
        fileExists: noDefaultFile)
    }
  }

  @Test(arguments: [
    (#"{"server": {"prot": 1}}"#, "f: unknown key server.prot"),
    (#"{"srv": {"port": 1}}"#, "f: unknown key srv.port"),
    (#"{"server": 8080}"#, "f: server must be an object"),
    (#"[1]"#, "f: the top level must be a JSON object"),
    (#"{"server": {"port": 80"#, "f: not valid JSON"),
    (#"{"server": {"port": "8080"}}"#, "f: server.port: expected an integer"),
    (#"{"server": {"port": 80.5}}"#, "f: server.port: expected an integer, got 80.5"),
    (#"{"server": {"port": true}}"#, "f: server.port: expected an integer"),
    (#"{"server": {"port": 70000}}"#, "f: server.port: must be 0…65535, not 70000"),
    (#"{"server": {"host": 1}}"#, "f: server.host: expected a string"),
    (#"{"auth": {"apiKeys": ["acme"]}}"#, "f: auth.apiKeys: entry 1 is not tenant:key (no ':')"),
  ])
  func malformedFilesAreRejectedWithTheKeyNamed(json: String, message: String) {
    var config = Application.Configuration()
    #expect(throws: ConfigurationError(message)) {
      try ConfigurationLoader.applyJSON(Data(json.utf8), source: "f", to: &config)
    }
  }

  @Test func commentKeysInTheFileAreIgnored() throws {
    var config = Application.Configuration()
    try ConfigurationLoader.applyJSON(
      Data(#"{"_comment": "x", "server": {"_why": "y", "port": 1}}"#.utf8), source: "f", to: &config)
    #expect(config.server.port == 1)
  }

  @Test(arguments: [
    (["ATTACHD_PORT": "eighty"], #"ATTACHD_PORT: expected an integer, got "eighty""#),
    (["ATTACHD_PORT": "-1"], "ATTACHD_PORT: must be 0…65535, not -1"),
    (["ATTACHD_HOST": ""], #"server.host must be an IPv4 address such as 127.0.0.1, not """#),
    (
      ["ATTACHD_HOST": "localhost"],
      #"server.host must be an IPv4 address such as 127.0.0.1, not "localhost""#
    ),
    (["ATTACHD_HEADER_TIMEOUT": "0"], "ATTACHD_HEADER_TIMEOUT: must be a positive number of seconds"),
    (["ATTACHD_DRAIN_DEADLINE": "-1"], "ATTACHD_DRAIN_DEADLINE: must be 0 or more seconds"),
    (["ATTACHD_MAX_HEADER_FIELDS": "0"], "ATTACHD_MAX_HEADER_FIELDS: must be 1…10000, not 0"),
    (["ATTACHD_DATA_DIR": ""], "storage.dataDir must not be empty"),
    (["ATTACHD_ACCESS_LOG": ""], "log.access must be stdout, stderr, off or a file path"),
  ])
  func badEnvironmentValuesAreRejectedWithTheVariableNamed(environment: [String: String], message: String) {
    #expect(throws: ConfigurationError(message)) {
      try ConfigurationLoader.load(
        options: ServeOptions(), environment: environment, fileExists: noDefaultFile)
    }
  }

  @Test func badFlagValuesAreRejectedWithTheFlagNamed() throws {
    let options = try ServeOptions.parse(["--port=99999"])
    #expect(throws: ConfigurationError("--port: must be 0…65535, not 99999")) {
      try ConfigurationLoader.load(options: options, environment: [:], fileExists: noDefaultFile)
    }
  }

  @Test func secondsAcceptFractionsAndTheDrainDeadlineAcceptsZero() throws {
    let config = try ConfigurationLoader.load(
      options: ServeOptions(),
      environment: [
        "ATTACHD_HEADER_TIMEOUT": "2.5", "ATTACHD_DRAIN_DEADLINE": "0", "ATTACHD_WORKER_THREADS": "3",
      ],
      fileExists: noDefaultFile)
    #expect(config.server.headerTimeout == 2.5)
    #expect(config.server.drainDeadline == 0)
    #expect(config.server.workerThreads == 3)
  }

  @Test func unrelatedEnvironmentVariablesAreIgnored() throws {
    let config = try ConfigurationLoader.load(
      options: ServeOptions(), environment: ["ATTACHD_CORPUS": "/x", "PORT": "1", "HOME": "/root"],
      fileExists: noDefaultFile)
    #expect(config == Application.Configuration())
  }

  @Test func apiKeysComeFromTheEnvironment() throws {
    let config = try ConfigurationLoader.load(
      options: ServeOptions(),
      environment: ["ATTACHD_API_KEYS": "acme:0123456789abcdef, beta:fedcba9876543210xyz"],
      fileExists: noDefaultFile)
    #expect(
      config.auth.apiKeys == [
        APIKey(tenant: "acme", key: "0123456789abcdef"), APIKey(tenant: "beta", key: "fedcba9876543210xyz"),
      ])
  }

  @Test func everyKeyHasAnAttachdVariableAndAUniquePath() {
    let keys = ConfigurationKey.all
    #expect(Set(keys.map(\.path)).count == keys.count)
    #expect(Set(keys.map(\.environment)).count == keys.count)
    for key in keys {
      #expect(key.environment.hasPrefix("ATTACHD_"))
      #expect(ConfigurationKey.named(key.path) != nil)
    }
  }
}

@Suite struct ServerOptionsMappingTests {
  @Test func everyServerSettingReachesTheServerConfiguration() throws {
    var options = Application.ServerOptions()
    options.host = "0.0.0.0"
    options.port = 9999
    options.eventLoops = 3
    options.workerThreads = 5
    options.workerQueueLength = 7
    options.maxConnections = 11
    options.headerTimeout = 1.5
    options.bodyIdleTimeout = 2
    options.keepAliveTimeout = 3
    options.writeTimeout = 4
    options.lingerTimeout = 0.25
    options.drainDeadline = 0
    options.maxRequestLineBytes = 1000
    options.maxHeaderBytes = 2000
    options.maxHeaderFields = 30
    options.listenBacklog = 40
    try options.validate()
    let config = options.serverConfiguration()
    try config.validate()
    #expect(config.host == "0.0.0.0")
    #expect(config.port == 9999)
    #expect(config.loopCount == 3)
    #expect(config.workerThreads == 5)
    #expect(config.workerQueueLength == 7)
    #expect(config.maxConnections == 11)
    #expect(config.headerTimeout == .milliseconds(1500))
    #expect(config.bodyIdleTimeout == .seconds(2))
    #expect(config.keepAliveTimeout == .seconds(3))
    #expect(config.writeTimeout == .seconds(4))
    #expect(config.lingerTimeout == .milliseconds(250))
    #expect(config.drainDeadline == .zero)
    #expect(config.parserLimits.maxRequestLineBytes == 1000)
    #expect(config.parserLimits.maxHeaderBytes == 2000)
    #expect(config.parserLimits.maxHeaderFields == 30)
    #expect(config.listenBacklog == 40)
  }

  @Test func zeroThreadsKeepTheServersOnePerCoreDefault() {
    let config = Application.ServerOptions().serverConfiguration()
    #expect(config.loopCount == Server.Configuration().loopCount)
    #expect(config.workerThreads == Server.Configuration().workerThreads)
    #expect(config.loopCount >= 1)
  }
}
