import Crypto
import Foundation
import HTTP
import Testing

@testable import App

/// `auth.tokenKeys` and the user limits as configuration, the error rows of tokens, and the
/// `attachd tokens` command.
@Suite struct TokenConfigurationTests {
  static let noDefaultFile: @Sendable (String) -> Bool = { _ in false }
  static let edKey = Ed25519PrivateKey(raw: [UInt8](repeating: 9, count: 32))!

  static func json(_ value: String) -> String {
    var out: [UInt8] = []
    JSONText.appendQuoted(value, to: &out)
    return String(decoding: out, as: UTF8.self)
  }

  @Test func tokenKeysAndUserLimitsLoadFromTheEnvironmentWithTheSecretFromItsVariable() throws {
    let keys = """
      [{"tenant":"acme","iss":"acme-backend","kid":"a1","alg":"EdDSA","public_key_pem":\(Self.json(Self.edKey.publicKey.pem))},
       {"tenant":"beta","iss":"beta-backend","alg":"HS256","secret_env":"BETA_TOKEN_SECRET","_note":"rotated 2026-11"}]
      """
    let secret = "0123456789abcdef0123456789abcdef-beta"
    let config = try ConfigurationLoader.load(
      options: ServeOptions(),
      environment: [
        "ATTACHD_TOKEN_KEYS": keys, "BETA_TOKEN_SECRET": secret, "ATTACHD_TOKEN_MAX_TTL": "900",
        "ATTACHD_TOKEN_LEEWAY": "0", "ATTACHD_USER_RATE_LIMIT": "2.5", "ATTACHD_USER_RATE_BURST": "5",
        "ATTACHD_CONCURRENT_UPLOADS_PER_USER": "3", "ATTACHD_USER_DAILY_FILES": "100",
        "ATTACHD_USER_DAILY_BYTES": "1000000", "ATTACHD_UPLOAD_RETRY_AFTER": "2",
      ], fileExists: Self.noDefaultFile)
    let tokens = config.auth.tokens
    #expect(tokens.keys.count == 2)
    #expect(tokens.keys[0].keyID == "a1" && tokens.keys[0].algorithm == .edDSA)
    #expect(tokens.keys[1].secretSource == .environment("BETA_TOKEN_SECRET"))
    #expect(tokens.keys[1].secret == Array(secret.utf8))
    #expect(tokens.maxTTLSeconds == 900 && tokens.leewaySeconds == 0)
    #expect(config.limits.userRate.requestsPerSecond == 2.5 && config.limits.userRate.burst == 5)
    #expect(
      config.limits.userUploads
        == UploadConcurrencyLimiter.Configuration(maxConcurrentUploadsPerKey: 3, retryAfterSeconds: 2))
    #expect(config.limits.userQuota == UsageLimiter.Configuration(dailyFiles: 100, dailyBytes: 1_000_000))
    // The description of a key never shows its secret.
    #expect(!String(describing: tokens.keys[1]).contains(secret))
  }

  @Test func aSecretFileIsReadWithoutItsTrailingNewline() throws {
    let directory = try LiveTesting.temporaryDirectory()
    let path = directory + "/secret"
    try Data("from-a-file-0123456789abcdef0123456789\n".utf8).write(to: URL(fileURLWithPath: path))
    var tokens = TokenVerifier.Configuration(keys: [
      TokenKey(tenant: "acme", issuer: "acme", algorithm: .hs256, secretSource: .file(path))
    ])
    tokens.resolveSecrets(environment: [:])
    #expect(tokens.keys[0].secret == Array("from-a-file-0123456789abcdef0123456789".utf8))
    try tokens.validate()
  }

  @Test(arguments: [
    (
      #"[{"tenant":"acme","iss":"a","alg":"HS256","secret":"0123456789abcdef0123456789abcdef"}]"#,
      "secret_env or secret_file"
    ),
    (#"[{"tenant":"acme","iss":"a","alg":"HS256","secret_env":"NOT_SET"}]"#, "NOT_SET is not set"),
    (#"[{"tenant":"acme","iss":"a","alg":"HS256","secret_env":"SHORT"}]"#, "at least 32 bytes"),
    (#"[{"tenant":"acme","iss":"a","alg":"EdDSA","public_key_pem":"junk"}]"#, "Ed25519 PEM public key"),
    (#"[{"tenant":"acme","iss":"a","alg":"RS256","public_key_pem":"x"}]"#, "alg must be EdDSA or HS256"),
    (#"[{"tenant":"acme","iss":"a","alg":"HS256","secret_env":"S","secret_file":"/f"}]"#, "not both"),
    (
      #"[{"tenant":"acme","iss":"a","alg":"HS256","secret_env":"LONG","colour":"red"}]"#,
      "unknown member colour"
    ),
    (
      #"[{"tenant":"acme","iss":"same","alg":"HS256","secret_env":"LONG"},{"tenant":"beta","iss":"same","alg":"HS256","secret_env":"LONG"}]"#,
      "an issuer names one tenant"
    ),
    (
      #"[{"tenant":"acme","iss":"a","kid":"k","alg":"HS256","secret_env":"LONG"},{"tenant":"acme","iss":"b","kid":"k","alg":"HS256","secret_env":"LONG"}]"#,
      "kid k is given twice"
    ),
  ])
  func aBadTokenKeyEntryStopsStartUpNamingItWithoutEchoingASecret(keys: String, message: String) {
    let environment = [
      "ATTACHD_TOKEN_KEYS": keys, "SHORT": "too-short", "LONG": "0123456789abcdef0123456789abcdef-long",
    ]
    do {
      _ = try ConfigurationLoader.load(
        options: ServeOptions(), environment: environment, fileExists: Self.noDefaultFile)
      Issue.record("accepted: \(keys)")
    } catch {
      #expect(
        error.message.hasPrefix("ATTACHD_TOKEN_KEYS") || error.message.hasPrefix("auth.tokenKeys"), "\(error)"
      )
      #expect(error.message.contains(message), "\(error)")
      #expect(!error.message.contains("0123456789abcdef0123456789abcdef"))
      #expect(!error.message.contains("too-short"))
    }
  }

  @Test func tokenRowsHaveOneCodeEachAndTheChallengeRFC6750Asks() {
    var codes = Set<String>()
    for error in TokenError.allCases {
      let row = ErrorTable.publicError(for: AccessError.token(error))
      #expect(codes.insert(row.code).inserted, "\(row.code) twice")
      #expect(row.code.hasPrefix("token_"))
      switch error {
      case .insufficientScope:
        #expect(row.status == 403)
        #expect(
          row.headers.first(name: "WWW-Authenticate") == #"Bearer error="insufficient_scope", scope="upload""#
        )
      case .maxFilesUsed, .maxBytesExceeded:
        #expect(row.status == 403 && row.headers.first(name: "WWW-Authenticate") == nil)
      default:
        #expect(row.status == 401)
        #expect(row.headers.first(name: "WWW-Authenticate") == #"Bearer error="invalid_token""#)
      }
    }
    #expect(codes.count == 16)
    let quota = ErrorTable.publicError(for: AccessError.quota(.dailyBytes(retryAfterSeconds: 42)))
    #expect(
      quota.status == 429 && quota.code == "daily_quota_bytes"
        && quota.headers.first(name: "Retry-After") == "42")
  }

  @Test func tokensNewKeyAndMintMakeATokenTheServerVerifies() throws {
    let binary = try #require(ServeBinaryTests.binary)
    let directory = try LiveTesting.temporaryDirectory()
    for algorithm in ["EdDSA", "HS256"] {
      let (status, output) = try LiveTesting.run(
        binary, ["tokens", "new-key", "--tenant", "acme", "--alg", algorithm, "--iss", "acme-backend"],
        timeout: 30)
      #expect(status == 0)
      let text = String(decoding: output, as: UTF8.self)
      let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
      let entryLine = try #require(lines.last { $0.hasPrefix("{") })
      let keyText = String(text[..<text.range(of: String(entryLine))!.lowerBound])
      let keyFile = directory + "/\(algorithm).key"
      try Data(keyText.utf8).write(to: URL(fileURLWithPath: keyFile))
      var configuration = TokenVerifier.Configuration(keys: try TokenKey.parseList(.text("[\(entryLine)]")))
      configuration.resolveSecrets(environment: [
        "ATTACHD_TOKEN_SECRET_ACME": keyText.trimmingCharacters(in: .newlines)
      ])
      try configuration.validate()
      if algorithm == "EdDSA" {
        #expect(keyText.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(!entryLine.contains("PRIVATE"))
      } else {
        #expect(entryLine.contains(#""secret_env":"ATTACHD_TOKEN_SECRET_ACME""#))
        #expect(!entryLine.contains(keyText.trimmingCharacters(in: .newlines)))
      }
      let (mintStatus, token) = try LiveTesting.run(
        binary,
        [
          "tokens", "mint", "--key", keyFile, "--iss", "acme-backend", "--sub", "user-9", "--scope",
          "upload read",
          "--jti", "j-9", "--max-files", "3",
        ], timeout: 30)
      #expect(mintStatus == 0)
      let verifier = TokenVerifier(configuration: configuration)
      let principal = try verifier.verify(
        String(decoding: token, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
        now: Int(Date().timeIntervalSince1970)
      ).get()
      #expect(
        principal.tenant == "acme" && principal.user == "user-9" && principal.scopes == [.upload, .read])
      #expect(principal.token?.maxFiles == 3 && principal.token?.jti == "j-9")
    }
    let (refused, _) = try LiveTesting.run(
      binary, ["tokens", "mint", "--key", "/dev/null", "--iss", "a", "--sub", "b"], timeout: 30)
    #expect(refused == 64)
  }
}
