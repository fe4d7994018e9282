import Testing

@testable import App

@Suite struct APIKeyTests {
  @Test func pairsAreSplitOnCommasAndTheFirstColon() throws {
    let keys = try APIKey.parseList(" acme:0123456789abcdef ,, beta-2:abc:def:0123456789 ,")
    #expect(
      keys == [
        APIKey(tenant: "acme", key: "0123456789abcdef"), APIKey(tenant: "beta-2", key: "abc:def:0123456789"),
      ])
  }

  @Test func anEmptyListHasNoKeys() throws {
    #expect(try APIKey.parseList("").isEmpty)
    #expect(try APIKey.parseList(" , ").isEmpty)
  }

  @Test(arguments: [
    ("acme", "entry 1 is not tenant:key (no ':')"),
    ("ok:0123456789abcdef,acme", "entry 2 is not tenant:key (no ':')"),
    (":0123456789abcdef", "entry 1 has an empty tenant"),
    ("acme:", "entry 1 (tenant acme) has an empty key"),
    ("acme:short", "entry 1 (tenant acme): key is shorter than 16 characters"),
    ("ac me:0123456789abcdef", "entry 1: tenant must be 1…64 of A-Z a-z 0-9 - _ ."),
    ("acme:0123456789 abcdef", "entry 1 (tenant acme): key must be printable ASCII, no spaces"),
  ])
  func malformedPairsAreRejectedWithAClearMessage(text: String, message: String) {
    #expect(throws: ConfigurationError(message)) { try APIKey.parseList(text) }
  }

  @Test func messagesNeverContainTheKey() {
    let secret = "s3cr3t"
    do {
      _ = try APIKey.parseList("acme:\(secret)")
      Issue.record("a 6-character key was accepted")
    } catch {
      #expect(!error.message.contains(secret))
    }
  }

  @Test func aKeyGivenTwiceIsRejected() {
    var auth = Authenticator.Configuration()
    auth.apiKeys = [
      APIKey(tenant: "a", key: "0123456789abcdef"), APIKey(tenant: "b", key: "0123456789abcdef"),
    ]
    #expect(throws: ConfigurationError("auth: a key of tenant b is given twice")) {
      try auth.validate()
    }
  }
}
