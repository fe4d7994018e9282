import Crypto
import Foundation
import Testing

@testable import App

@Suite struct HashedKeyTests {
  static let digestHex = Hex.encode(SHA256.hash("ak_some-key-0123456789abcdefghij"))

  @Test func aConfigArrayParsesIntoEntries() throws {
    let text = """
      [{"tenant": "acme", "scopes": ["upload", "read"], "key_sha256": "\(Self.digestHex)", "_note": "phone"},
       {"tenant": "b.2", "scopes": ["delete"], "key_sha256": "\(Self.digestHex.uppercased())"}]
      """
    let keys = try HashedKey.parseList(jsonText: text)
    #expect(keys.count == 2)
    #expect(
      keys[0] == HashedKey(tenant: "acme", scopes: [.upload, .read], keySHA256: Hex.decode(Self.digestHex)!))
    #expect(keys[1].tenant == "b.2")
    #expect(keys[1].scopes == [.delete])
  }

  @Test func theJSONLineParsesBackToTheSameEntry() throws {
    let entry = HashedKey(
      tenant: "acme", scopes: [.read, .upload, .delete], key: "ak_some-key-0123456789abcdefghij")
    #expect(
      entry.jsonLine
        == #"{"tenant":"acme","scopes":["upload","read","delete"],"key_sha256":"\#(Self.digestHex)"}"#)
    #expect(try HashedKey.parseList(jsonText: "[\(entry.jsonLine)]") == [entry])
  }

  @Test func anEnvironmentValueIsTheSameJSONAsText() throws {
    let line = HashedKey(tenant: "acme", scopes: [.read], key: "k").jsonLine
    #expect(try HashedKey.parseList(.text("[\(line)]")).count == 1)
    #expect(try HashedKey.parseList(.text("  ")).isEmpty)
  }

  @Test(arguments: [
    (#"{"tenant":"a"}"#, "expected an array of {tenant, scopes, key_sha256} objects"),
    ("[1]", "entry 1 must be an object"),
    (#"[{"tenant":"a","scopes":["read"],"key_sha256":"HEX","key":"x"}]"#, "entry 1: unknown member key"),
    (#"[{"scopes":["read"],"key_sha256":"HEX"}]"#, "entry 1: tenant must be a string"),
    (
      #"[{"tenant":"a b","scopes":["read"],"key_sha256":"HEX"}]"#,
      "entry 1: tenant must be 1…64 of A-Z a-z 0-9 - _ ."
    ),
    (
      #"[{"tenant":"a","scopes":"read","key_sha256":"HEX"}]"#,
      "entry 1 (tenant a): scopes must be an array of strings"
    ),
    (#"[{"tenant":"a","scopes":[],"key_sha256":"HEX"}]"#, "entry 1 (tenant a): at least one scope is needed"),
    (
      #"[{"tenant":"a","scopes":["admin"],"key_sha256":"HEX"}]"#,
      "entry 1 (tenant a): unknown scope \"admin\" (known: upload, read, delete)"
    ),
    (
      #"[{"tenant":"a","scopes":["read"],"key_sha256":"abc"}]"#,
      "entry 1 (tenant a): key_sha256 must be 64 hex digits"
    ),
    (#"[{"tenant":"a","scopes":["read"]}]"#, "entry 1 (tenant a): key_sha256 must be 64 hex digits"),
    ("not json", "not valid JSON (expected an array of key entries)"),
  ])
  func malformedEntriesAreRejectedWithAClearMessage(template: String, message: String) {
    let text = template.replacingOccurrences(of: "HEX", with: Self.digestHex)
    #expect(throws: ConfigurationError(message)) { try HashedKey.parseList(jsonText: text) }
  }

  @Test func scopeListsAcceptCommasAndPluses() throws {
    #expect(try Scope.parseList("upload,read") == [.upload, .read])
    #expect(try Scope.parseList("read+delete") == [.read, .delete])
    #expect(try Scope.parseList(" upload , read , delete ") == Set(Scope.allCases))
    #expect(throws: ConfigurationError.self) { try Scope.parseList("") }
    #expect(throws: ConfigurationError.self) { try Scope.parseList("write") }
  }
}
