import Foundation
import Storage
import TestSupport
import Testing

@testable import App

/// The built `attachd serve` on S3 + PostgreSQL, configured only through the environment as
/// containers do: it serves, its logs never hold a credential, and a backend it cannot reach
/// at start is a distinct exit status with a message that names it without its password.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ServeBinaryScaleOutTests {
  static func environment(_ backends: ScaleOutBackends, url: String? = nil) -> [String: String] {
    [
      "ATTACHD_API_KEYS": "acme:0123456789abcdef", "ATTACHD_ACCESS_LOG": "off",
      "ATTACHD_STORAGE_BACKEND": "s3", "ATTACHD_S3_ENDPOINT": backends.s3.endpoint,
      "ATTACHD_S3_BUCKET": backends.s3.bucket, "ATTACHD_S3_REGION": backends.s3.region,
      "ATTACHD_S3_ACCESS_KEY_ID": backends.s3.accessKeyId,
      "ATTACHD_S3_SECRET_ACCESS_KEY": backends.s3.secretAccessKey, "ATTACHD_INDEX_BACKEND": "postgres",
      "ATTACHD_POSTGRES_URL": url ?? backends.postgresURL, "ATTACHD_POSTGRES_CONNECT_TIMEOUT": "1",
    ]
  }

  static func credentials(_ backends: ScaleOutBackends) throws -> [String] {
    let password = try #require(URLComponents(string: backends.postgresURL)?.password)
    return [backends.s3.secretAccessKey, backends.s3.accessKeyId, password]
  }

  @Test(.enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built"))
  func serveRunsOnS3AndPostgresFromTheEnvironmentAndLogsNoCredential() throws {
    let backends = try ScaleOutBackends.make(label: "binary")
    let dataDir = try LiveTesting.temporaryDirectory() + "/data"
    let started = try ServeBinaryTests().start(
      ["--port", "0", "--data-dir", dataDir], environment: Self.environment(backends))
    defer { if started.process.isRunning { started.process.terminate() } }
    let base = "http://127.0.0.1:\(started.port)"
    #expect(try LiveTesting.curl(base + "/readyz").status == 200)
    let (status, output) = try LiveTesting.run(
      "/usr/bin/curl",
      [
        "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "30", "-H",
        "Authorization: Bearer 0123456789abcdef", "--data-binary", "@" + (try DistinctImages.file(seed: 900)),
        base + "/v1/attachments",
      ], timeout: 35)
    #expect(status == 0 && String(decoding: output, as: UTF8.self) == "201")
    #expect(try backends.blobs().count == 1)
    kill(started.process.processIdentifier, SIGTERM)
    #expect(LiveTesting.waitUntil(seconds: 15) { !started.process.isRunning })
    started.process.waitUntilExit()
    #expect(started.process.terminationStatus == 0)
    let log = try String(contentsOfFile: started.stderrPath, encoding: .utf8)
    #expect(
      log.contains("blobs: s3 \(backends.s3.endpoint)/\(backends.s3.bucket), index: postgres postgresql://"))
    for credential in try Self.credentials(backends) { #expect(!log.contains(credential)) }
  }

  @Test(.enabled(if: ServeBinaryTests.binary != nil, "attachd binary not built"))
  func anUnreachableIndexAtStartExitsUnavailableWithoutThePassword() throws {
    let backends = try ScaleOutBackends.make(label: "nopg")
    // A port nothing listens on: the connection is refused at once.
    let closed = try #require(URLComponents(string: backends.postgresURL)).with(port: 1)
    let binary = try #require(ServeBinaryTests.binary)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = [
      "serve", "--port", "0", "--data-dir", try LiveTesting.temporaryDirectory() + "/data",
    ]
    process.environment = Self.environment(backends, url: closed)
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    #expect(process.terminationStatus == 69, "\(message)")
    #expect(
      message.contains("cannot open storage") && message.contains("attachd:***@127.0.0.1:1/"), "\(message)")
    for credential in try Self.credentials(backends) { #expect(!message.contains(credential)) }
  }
}

extension URLComponents {
  /// The URL with another port, as text.
  fileprivate func with(port: Int) -> String {
    var copy = self
    copy.port = port
    return copy.string ?? ""
  }
}
