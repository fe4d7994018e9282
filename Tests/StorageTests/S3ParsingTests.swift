import Foundation
import Testing

@testable import Storage

/// The small pieces under the S3 client, on exact bytes: XML, percent-encoding, dates, settings.
@Suite struct S3ParsingTests {
  @Test func listingXMLWithEntitiesCDATAAndNamespacesParses() throws {
    let document = """
      \u{FEFF}<?xml version="1.0" encoding="UTF-8"?>
      <!-- a comment -->
      <s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/" a='x>y'>
        <Name>b</Name><Prefix/>
        <Contents><Key>a&amp;b&lt;c&gt;&quot;&apos;&#34;&#x1F4F7;</Key><Size>12</Size></Contents>
        <Contents><Key><![CDATA[raw <text> & more]]></Key><Size>0</Size></Contents>
        <IsTruncated>true</IsTruncated><?pi inside?>
      </s3:ListBucketResult>
      """
    let root = try XMLTree.parse(Array(document.utf8))
    #expect(root.name == "ListBucketResult")
    #expect(root.value("Name") == "b")
    #expect(root.value("Prefix") == "")
    #expect(root.children("Contents").map { $0.value("Key") } == ["a&b<c>\"'\"📷", "raw <text> & more"])
    #expect(root.children("Contents").map { $0.value("Size") } == ["12", "0"])
    #expect(root.value("IsTruncated") == "true")
    #expect(root.value("Missing") == nil)
  }

  @Test(arguments: [
    "", "<a>", "<a></b>", "<a><b></a></b>", "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "<a>&bogus;</a>",
    "<a>&#0;</a>", "<a>&#xD800;</a>", "<a/><b/>", "text", "<a><![CDATA[never closed</a>", "<>", "<a>&amp</a>",
    String(repeating: "<a>", count: 65) + String(repeating: "</a>", count: 65),
  ])
  func malformedOrHostileXMLIsRefused(document: String) {
    let error = #expect(throws: StorageError.self) { try XMLTree.parse(Array(document.utf8)) }
    #expect(error?.code == .io)
  }

  @Test func nestingUpToTheLimitIsFine() throws {
    let document = String(repeating: "<a>", count: 64) + "x" + String(repeating: "</a>", count: 64)
    var node = try XMLTree.parse(Array(document.utf8))
    for _ in 1..<64 { node = try #require(node.child("a")) }
    #expect(node.text == "x")
  }

  @Test func pathsAndQueriesAreEncodedAsSigV4Wants() {
    #expect(S3URI.encodePath("a b+c~d/é/日.jpg") == "a%20b%2Bc~d/%C3%A9/%E6%97%A5.jpg")
    #expect(
      S3URI.encodePath("A-Z_a.z0~9!*'();:@&=$,?#[]%")
        == "A-Z_a.z0~9%21%2A%27%28%29%3B%3A%40%26%3D%24%2C%3F%23%5B%5D%25")
    #expect(S3URI.encodeComponent("a/b c") == "a%2Fb%20c")
    #expect(
      S3URI.query([("uploads", ""), ("prefix", "x y"), ("b", "2"), ("b", "1"), ("list-type", "2")])
        == "b=1&b=2&list-type=2&prefix=x%20y&uploads=")
    #expect(S3URI.query([]) == "")
  }

  @Test func percentDecodingUndoesEncodingAndRefusesBadEscapes() {
    for text in ["a b+c~d/é/日.jpg", "%", "tab\tdel\u{7F}", "📷"] {
      #expect(S3URI.decode(S3URI.encodeComponent(text), plusIsSpace: true) == text)
    }
    #expect(S3URI.decode("a+b%2B", plusIsSpace: true) == "a b+")
    #expect(S3URI.decode("a+b", plusIsSpace: false) == "a+b")
    #expect(S3URI.decode("%zz", plusIsSpace: true) == nil)
    #expect(S3URI.decode("%4", plusIsSpace: true) == nil)
    #expect(S3URI.decode("%FF", plusIsSpace: true) == nil)  // not UTF-8
  }

  @Test func s3DatesParse() {
    let expected = Date(timeIntervalSince1970: 1_796_152_362)  // 2026-12-01 19:12:42 UTC
    #expect(S3Date.parseISO8601("2026-12-01T19:12:42Z") == expected)
    #expect(S3Date.parseISO8601("2026-12-01T19:12:42.500Z") == expected.addingTimeInterval(0.5))
    #expect(S3Date.parseHTTP("Tue, 01 Dec 2026 19:12:42 GMT") == expected)
    #expect(S3Date.parseISO8601("1970-01-01T00:00:00.000Z") == Date(timeIntervalSince1970: 0))
    #expect(S3Date.parseISO8601("2024-02-29T23:59:59Z") == Date(timeIntervalSince1970: 1_709_251_199))
    for bad in [
      "", "2026-13-01T00:00:00Z", "2026-12-01 19:12:42Z", "2026-12-01T19:12:42", "2026-12-01T19:12:42.Z",
    ] {
      #expect(S3Date.parseISO8601(bad) == nil, "\(bad)")
    }
    #expect(S3Date.parseHTTP("Tue, 01 Foo 2026 19:12:42 GMT") == nil)
  }

  @Test func configurationValidationNamesTheProblem() throws {
    let good = S3Client.Configuration(
      endpoint: "https://s3.example.com", bucket: "my.bucket-1", region: "eu-west-3", accessKeyId: "AKIA1",
      secretAccessKey: "s")
    try good.validate()
    try S3BlobStore.Configuration(client: good, keyPrefix: "").validate()
    var variants: [(String, (inout S3Client.Configuration) -> Void)] = []
    for endpoint in [
      "ftp://h", "http://", "http://u:p@h", "http://h/path", "http://h?q", "http://h:0", "h:80",
    ] {
      variants.append(("endpoint", { $0.endpoint = endpoint }))
    }
    for bucket in ["ab", "UPPER", "-dash", "dash-", "under_score", String(repeating: "a", count: 64)] {
      variants.append(("bucket", { $0.bucket = bucket }))
    }
    variants += [
      ("region", { $0.region = "" }), ("region", { $0.region = "a:b" }),
      ("accessKeyId", { $0.accessKeyId = "" }),
      ("secret", { $0.secretAccessKey = "with space" }), ("connect", { $0.timeouts.connect = 0 }),
      ("idle", { $0.timeouts.idle = 0.5 }), ("request", { $0.timeouts.request = .infinity }),
      ("attempts", { $0.retry.maxAttempts = 0 }), ("delay", { $0.retry.baseDelay = 3 }),
      ("pool", { $0.maxIdleConnections = -1 }),
    ]
    for (name, change) in variants {
      var configuration = good
      change(&configuration)
      let error = #expect(throws: StorageError.self, "\(name)") { try configuration.validate() }
      #expect(error?.code == .invalidArgument)
      #expect(throws: StorageError.self) { try S3Client(configuration: configuration) }
    }
    for prefix in ["blobs", "/blobs/", String(repeating: "p", count: 600) + "/"] {
      #expect(throws: StorageError.self, "\(prefix)") {
        try S3BlobStore.Configuration(client: good, keyPrefix: prefix).validate()
      }
    }
    #expect(throws: StorageError.self) {
      try S3BlobStore.Configuration(client: good, refreshAge: -1).validate()
    }
  }
}
