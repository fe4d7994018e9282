import Crypto
import Testing

@testable import App

@Suite struct KeyGeneratorTests {
  @Test func newKeysArePrefixedBase64URLOf192RandomBits() throws {
    let key = KeyGenerator.newKey()
    #expect(key.hasPrefix("ak_"))
    #expect(key.utf8.count == 35)
    let bytes = try #require(Base64URL.decode(String(key.dropFirst(3))))
    #expect(bytes.count == 24)
  }

  @Test func newKeysDiffer() {
    let keys = Set((0..<200).map { _ in KeyGenerator.newKey() })
    #expect(keys.count == 200)
  }

  @Test func aGeneratedKeyIsAcceptedByItsEntryAndPassesAPIKeyRules() throws {
    let (key, entry) = KeyGenerator.generate(tenant: "acme", scopes: [.upload, .read])
    try APIKey(tenant: "acme", key: key).validate(position: 1)
    let parsed = try HashedKey.parseList(jsonText: "[\(entry.jsonLine)]")
    #expect(!entry.jsonLine.contains(key))
    let authenticator = Authenticator(configuration: .init(keys: parsed))
    #expect(
      authenticator.authenticate(authorizationHeader: "Bearer \(key)")
        == .ok(Principal(tenant: "acme", scopes: [.upload, .read], keyID: entry.keyID)))
  }

  @Test(arguments: [
    ["new", "--tenant", "acme", "--scopes", "upload,read"],
    ["new", "--scopes=read,upload", "--tenant=acme"],
  ])
  func argumentsAreParsed(arguments: [String]) throws {
    #expect(try KeyGenerator.parseArguments(arguments) == .init(tenant: "acme", scopes: [.upload, .read]))
  }

  @Test(arguments: [
    ([], "no keys command given (try: new)"),
    (["list"], "unknown keys command list (try: new)"),
    (["new", "--scopes", "read"], "--tenant is required"),
    (["new", "--tenant", "acme"], "--scopes is required (e.g. upload,read)"),
    (["new", "--tenant"], "--tenant needs a value"),
    (["new", "--tenant", "a/b", "--scopes", "read"], "--tenant must be 1…64 of A-Z a-z 0-9 - _ ."),
    (
      ["new", "--tenant", "a", "--scopes", "read,admin"],
      "--scopes: unknown scope \"admin\" (known: upload, read, delete)"
    ),
    (["new", "--tenant", "a", "--color", "x"], "unknown option --color"),
    (["new", "--tenant", "a", "--color=x"], "unknown option --color"),
  ])
  func badArgumentsSayWhatIsWrong(arguments: [String], message: String) {
    #expect(throws: ConfigurationError(message)) { try KeyGenerator.parseArguments(arguments) }
  }
}
