import Foundation
import Storage
import TestSupport
import Testing

/// No credential in any error or description: every failure is forced and its text searched for
/// the secret, the access key id and any trace of an Authorization header.
@Suite(.timeLimit(.minutes(1)))
struct S3CredentialTests {
  static let accessKeyId = "AKIALEAKCHECK7777777"
  static let secretAccessKey = "leak/Check+Secret=abcdefghijklmnop0123"

  /// The text a log line would get from `error`, in every form it could be printed.
  static func texts(of error: any Error) -> [String] {
    [
      String(describing: error), String(reflecting: error), "\(error)",
      (error as? StorageError)?.detail ?? "",
    ]
  }

  static func expectClean(_ error: (any Error)?, forbidden: [String], _ context: String) {
    guard let error else {
      Issue.record("\(context): no error was thrown")
      return
    }
    for text in texts(of: error) {
      for word in forbidden + ["Authorization", "authorization", "Signature=", "Credential="] {
        #expect(!text.contains(word), "\(context): \(text)")
      }
    }
  }

  static func configuration(port: Int) -> S3Client.Configuration {
    S3Client.Configuration(
      endpoint: "http://127.0.0.1:\(port)", bucket: "leaks", accessKeyId: accessKeyId,
      secretAccessKey: secretAccessKey, timeouts: S3Client.Timeouts(connect: 1, idle: 1, request: 3),
      retry: S3Client.Retry(maxAttempts: 2, baseDelay: 0.01, maxDelay: 0.02))
  }

  @Test func serverErrorsThatQuoteTheRequestAreRedacted() throws {
    // A server (or proxy) that echoes the request back in its error, as AWS does in part for
    // SignatureDoesNotMatch (AWSAccessKeyId, CanonicalRequest).
    let server = try ScriptedHTTPServer { request, index in
      let quoted = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: " | ")
      let document = """
        <Error><Code>SignatureDoesNotMatch</Code><Message>you sent \(quoted) with key \(Self.accessKeyId) \
        and secret \(Self.secretAccessKey)</Message><AWSAccessKeyId>\(Self.accessKeyId)</AWSAccessKeyId>\
        <StringToSign>\(quoted)</StringToSign></Error>
        """
      return .respond(
        index % 2 == 0 ? 403 : 503, headers: [("x-amz-request-id", Self.accessKeyId)],
        body: Array(document.utf8))
    }
    defer { server.stop() }
    let client = try S3Client(configuration: Self.configuration(port: server.port))
    let forbidden = [Self.accessKeyId, Self.secretAccessKey]
    Self.expectClean(
      #expect(throws: StorageError.self) { try client.headObject("k") }, forbidden: forbidden, "HEAD")
    Self.expectClean(
      #expect(throws: StorageError.self) { try client.getObject("k") { _ in } }, forbidden: forbidden, "403")
    // A 503 first, then the 403: the retry path words its error differently.
    Self.expectClean(
      #expect(throws: StorageError.self) { try client.listObjects(prefix: "") }, forbidden: forbidden, "list")
    let error = #expect(throws: StorageError.self) { try client.deleteObject("k") }
    Self.expectClean(error, forbidden: forbidden, "delete")
    #expect(error?.description.contains("SignatureDoesNotMatch") == true, "the S3 code stays for the log")
  }

  @Test func transportFailuresNameNoCredential() throws {
    let silent = try ScriptedHTTPServer { _, _ in .hang }
    defer { silent.stop() }
    let closed = try ScriptedHTTPServer { _, _ in .respond(200) }
    closed.stop()
    let forbidden = [Self.accessKeyId, Self.secretAccessKey]
    for (name, port) in [("timeout", silent.port), ("refused", closed.port)] {
      let client = try S3Client(configuration: Self.configuration(port: port))
      let error = #expect(throws: StorageError.self) {
        try [UInt8(1)].withUnsafeBytes { _ = try client.putObject("k", body: .bytes($0)) }
      }
      #expect(error?.code == .unavailable)
      Self.expectClean(error, forbidden: forbidden, name)
    }
  }

  @Test func wrongCredentialsAgainstSeaweedFSNameNeither() throws {
    let server = try SeaweedFS.shared()
    let good = try SharedBucket.configuration("credentials")
    var wrongSecret = good
    wrongSecret.secretAccessKey = Self.secretAccessKey
    var wrongKey = good
    wrongKey.accessKeyId = Self.accessKeyId
    for configuration in [wrongSecret, wrongKey] {
      let client = try S3Client(configuration: configuration)
      let forbidden = [configuration.accessKeyId, configuration.secretAccessKey, server.secretAccessKey]
      let put = #expect(throws: StorageError.self) {
        try [UInt8(1)].withUnsafeBytes { _ = try client.putObject("k", body: .bytes($0)) }
      }
      #expect(put?.code == .io)
      Self.expectClean(put, forbidden: forbidden, "put")
      Self.expectClean(
        #expect(throws: StorageError.self) { try client.listObjects(prefix: "") }, forbidden: forbidden,
        "list")
      Self.expectClean(
        #expect(throws: StorageError.self) { try client.getObject("k") { _ in } }, forbidden: forbidden, "get"
      )
    }
  }

  @Test func configurationDescriptionsAndValidationNameNoCredential() throws {
    let configuration = Self.configuration(port: 1)
    let store = S3BlobStore.Configuration(client: configuration)
    let forbidden = [Self.accessKeyId, Self.secretAccessKey]
    var dumped = ""
    dump(configuration, to: &dumped)
    dump(store, to: &dumped)
    for text in [
      String(describing: configuration), String(reflecting: configuration), "\(store)",
      String(reflecting: store),
      dumped,
    ] {
      for word in forbidden { #expect(!text.contains(word), "\(text)") }
    }
    #expect(String(describing: configuration).contains("127.0.0.1:1"))
    var broken = configuration
    broken.secretAccessKey += " with space"
    broken.accessKeyId = "AKIA\u{1}"
    Self.expectClean(
      #expect(throws: StorageError.self) { try broken.validate() }, forbidden: forbidden, "validate")
  }
}
