import Crypto
import Synchronization
import Testing

@testable import App

@Suite struct AuthenticatorTests {
  static let uploadKey = "ak_uploadreadkey0123456789abcdefgh"
  static let deleteKey = "ak_deleteonlykey0123456789abcdefgh"
  static let plainKey = "plain-key-for-tests-0001"

  static func configuration() -> Authenticator.Configuration {
    Authenticator.Configuration(
      keys: [
        HashedKey(tenant: "acme", scopes: [.upload, .read], key: uploadKey),
        HashedKey(tenant: "beta", scopes: [.delete], key: deleteKey),
      ],
      apiKeys: [APIKey(tenant: "gamma", key: plainKey)])
  }

  let authenticator = Authenticator(configuration: Self.configuration())

  @Test func aKnownBearerKeyYieldsItsTenantScopesAndKeyID() throws {
    let result = authenticator.authenticate(authorizationHeader: "Bearer \(Self.uploadKey)")
    guard case .ok(let principal) = result else {
      Issue.record("expected .ok, got \(result)")
      return
    }
    #expect(principal.tenant == "acme")
    #expect(principal.scopes == [.upload, .read])
    let expectedID = "k_" + String(Hex.encode(SHA256.hash(Self.uploadKey)).prefix(8))
    #expect(principal.keyID == expectedID)
    #expect(principal.has(.upload) && principal.has(.read))
    #expect(!principal.has(.delete))
  }

  @Test func aKeyWithoutAScopeIsAuthenticatedButLacksIt() throws {
    guard
      case .ok(let principal) = authenticator.authenticate(authorizationHeader: "Bearer \(Self.deleteKey)")
    else {
      Issue.record("delete key not accepted")
      return
    }
    #expect(principal.tenant == "beta")
    #expect(principal.has(.delete))
    #expect(!principal.has(.upload))
    #expect(!principal.has(.read))
  }

  @Test func plainEnvironmentKeysCarryEveryScope() {
    guard case .ok(let principal) = authenticator.authenticate(authorizationHeader: "Bearer \(Self.plainKey)")
    else {
      Issue.record("plain key not accepted")
      return
    }
    #expect(principal.tenant == "gamma")
    #expect(principal.scopes == Set(Scope.allCases))
  }

  @Test(arguments: ["bearer", "BEARER", "BeArEr"])
  func theSchemeIsCaseInsensitive(scheme: String) {
    #expect(authenticator.authenticate(authorizationHeader: "\(scheme) \(Self.uploadKey)") != .invalid)
    #expect(authenticator.authenticate(authorizationHeader: "\(scheme)  \(Self.uploadKey) ") != .invalid)
  }

  @Test func noHeaderIsMissing() {
    #expect(authenticator.authenticate(authorizationHeader: nil) == .missing)
  }

  @Test func aWrongKeyIsInvalid() {
    #expect(
      authenticator.authenticate(authorizationHeader: "Bearer ak_uploadreadkey0123456789abcdefgX") == .invalid
    )
    #expect(authenticator.authenticate(authorizationHeader: "Bearer \(Self.uploadKey)x") == .invalid)
    #expect(
      authenticator.authenticate(authorizationHeader: "Bearer \(Self.uploadKey.dropLast())") == .invalid)
  }

  @Test(arguments: [
    "", "Bearer", "Bearer ", "Bearer\(uploadKey)", "Basic \(uploadKey)", "Token \(uploadKey)",
    "Bearer \(uploadKey) extra", "Bearer \(uploadKey),other", "Bearer a\u{7F}b", "Bearer\t",
    "Bearer " + String(repeating: "a", count: 1025),
  ])
  func malformedHeadersAreInvalid(header: String) {
    #expect(authenticator.authenticate(authorizationHeader: header) == .invalid)
  }

  @Test func aKeyWithItsHashAsTheCredentialIsRejected() {
    // The config file holds hashes; presenting the hash itself must not work.
    let hash = Hex.encode(SHA256.hash(Self.uploadKey))
    #expect(authenticator.authenticate(authorizationHeader: "Bearer \(hash)") == .invalid)
  }

  /// The structural constant-time property: every stored hash is compared, with the same
  /// lengths, whether the first, the last or no entry matches.
  @Test(arguments: [0, 7, 15, -1])
  func everyEntryIsComparedWhicheverMatches(matchingIndex: Int) {
    let keys = (0..<16).map { "ak_structural-key-\($0)-0123456789abcdef" }
    let entries = keys.enumerated().map {
      HashedKey(tenant: "t\($0.offset)", scopes: [.read], key: $0.element)
    }
    let calls = Mutex<[(Int, Int)]>([])
    let authenticator = Authenticator(entries: entries) { a, b in
      calls.withLock { $0.append((a.count, b.count)) }
      return constantTimeEquals(a, b)
    }
    let presented = matchingIndex >= 0 ? keys[matchingIndex] : "ak_not-a-configured-key-0123456789"
    let result = authenticator.authenticate(authorizationHeader: "Bearer \(presented)")
    let recorded = calls.withLock { $0 }
    #expect(recorded.count == 16)
    #expect(recorded.allSatisfy { $0 == (32, 32) })
    if matchingIndex >= 0 {
      #expect(
        result
          == .ok(Principal(tenant: "t\(matchingIndex)", scopes: [.read], keyID: entries[matchingIndex].keyID))
      )
    } else {
      #expect(result == .invalid)
    }
  }

  @Test func theProductionComparisonIsConstantTimeEquals() {
    // Authenticator(configuration:) must use the Crypto constant-time compare; it agrees with
    // it on equal, unequal and different-length inputs.
    let authenticator = Authenticator(configuration: Self.configuration())
    let a = SHA256.hash("a")
    let b = SHA256.hash("b")
    #expect(authenticator.compare(a, a))
    #expect(!authenticator.compare(a, b))
    #expect(!authenticator.compare(a, Array(a.dropLast())))
    #expect(authenticator.count == 3)
  }

  @Test func anEmptyStoreRefusesEveryKey() {
    let authenticator = Authenticator(configuration: .init())
    #expect(authenticator.authenticate(authorizationHeader: "Bearer \(Self.uploadKey)") == .invalid)
  }

  @Test func aKeyGivenTwiceIsAConfigurationError() {
    var configuration = Self.configuration()
    configuration.apiKeys.append(APIKey(tenant: "other", key: Self.uploadKey))
    #expect(throws: ConfigurationError("auth: a key of tenant other is given twice")) {
      try configuration.validate()
    }
  }

  @Test func aValidConfigurationPasses() throws {
    try Self.configuration().validate()
  }

  @Test func badEntriesNameTheirSection() {
    var configuration = Authenticator.Configuration()
    configuration.keys = [HashedKey(tenant: "acme", scopes: [], keySHA256: SHA256.hash("x"))]
    #expect(throws: ConfigurationError("auth.keys: entry 1 (tenant acme) has no scopes")) {
      try configuration.validate()
    }
    configuration.keys = []
    configuration.apiKeys = [APIKey(tenant: "acme", key: "short")]
    #expect(
      throws: ConfigurationError("auth.apiKeys: entry 1 (tenant acme): key is shorter than 16 characters")
    ) {
      try configuration.validate()
    }
  }
}
