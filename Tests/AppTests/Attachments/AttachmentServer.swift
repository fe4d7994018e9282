import AttachdTesting
import Foundation
import HTTP
import Server
import Testing

@testable import App

/// The real App (storage in a temp dir, real pipeline) on the real server on 127.0.0.1, with a
/// test client for each way in: `client` drives the App in-process, `live` goes through the
/// server's socket, `curl` is curl.
final class AttachmentServer {
  /// All scopes, tenant acme.
  static let acmeKey = "acme-key-0123456789abcdef0123"
  /// All scopes, tenant beta.
  static let betaKey = "beta-key-0123456789abcdef0123"
  /// Only `upload`, tenant acme.
  static let uploadOnlyKey = "acme-upload-only-0123456789ab"

  let app: Application
  let directory: String
  let base: String
  /// The server's port on 127.0.0.1.
  let port: Int
  /// The App driven in-process: no socket, the server's parser, contract and writer.
  let client: TestClient
  /// The real server, over its socket.
  let live: TestClient
  private let server: Server
  private let stopped = DispatchSemaphore(value: 0)

  /// `accessLog` and `eventLog` are off unless a test reads them.
  init(
    accessLog: AccessLog = AccessLog(sink: .off), eventLog: EventLog = EventLog(sink: .off),
    configure: (inout Application.Configuration) -> Void = { _ in }
  ) throws {
    directory = try LiveTesting.temporaryDirectory()
    var config = Application.Configuration()
    config.server.port = 0
    config.server.eventLoops = 1
    config.server.workerThreads = 2
    config.storage.dataDirectory = directory + "/data"
    try FileManager.default.createDirectory(
      atPath: config.storage.dataDirectory, withIntermediateDirectories: true)
    config.auth.apiKeys = [
      APIKey(tenant: "acme", key: Self.acmeKey), APIKey(tenant: "beta", key: Self.betaKey),
    ]
    config.auth.keys = [HashedKey(tenant: "acme", scopes: [.upload], key: Self.uploadOnlyKey)]
    config.limits.rate.requestsPerSecond = 0
    config.signing.secret = "test-signing-secret-0123456789abcdef"
    configure(&config)
    try config.validate()
    app = try Application(configuration: config, accessLog: accessLog, eventLog: eventLog)
    server = try app.makeServer(handleSignals: false)
    port = server.localPort
    base = "http://127.0.0.1:\(port)"
    client = TestClient(.inProcess(app))
    live = TestClient(.live(port: port))
    Thread.detachNewThread { [server, stopped] in
      try? server.run()
      stopped.signal()
    }
  }

  /// Jobs on the server's CPU workers (queued or running): the pipeline of an upload that
  /// came over the socket, never work of the in-process client.
  var serverCPUJobs: Int { server.pool.inFlight }

  func stop() {
    server.shutdown()
    stopped.wait()
    client.shutdown()
    app.stopBackgroundWork()
  }

  /// The `Authorization` header of `key`, as a curl or raw header line.
  static func bearer(_ key: String) -> String { "Authorization: Bearer \(key)" }

  /// The `Authorization` header of `key`.
  static func auth(_ key: String) -> HTTPHeaders { ["Authorization": "Bearer \(key)"] }

  /// A raw upload of `file`'s bytes with the acme key (or `key`), chunked or with
  /// `Content-Length`, through `client` (the in-process one unless given).
  func post(
    file: String, key: String = acmeKey, headers: HTTPHeaders = [:], chunked: Bool = false,
    via client: TestClient? = nil
  ) throws -> TestResponse {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
    return try (client ?? self.client).execute(
      "POST", "/v1/attachments", headers: Self.auth(key) + headers,
      body: chunked ? .chunked(bytes, size: 16 << 10) : .bytes(bytes))
  }

  /// curl with `arguments` (after `-s -i`); interim 1xx answers are skipped.
  func curl(_ path: String, _ arguments: [String], timeout: Double = 30) throws -> LiveTesting.Reply {
    let (status, data) = try LiveTesting.run(
      "/usr/bin/curl", ["-s", "-i", "--max-time", String(Int(timeout)), base + path] + arguments,
      timeout: timeout + 5)
    #expect(status == 0, "curl exit status \(status)")
    return try Self.parseFinal(data)
  }

  /// The final response of a `curl -i` transcript.
  static func parseFinal(_ data: Data) throws -> LiveTesting.Reply {
    var rest = data
    while true {
      let reply = try LiveTesting.parse(rest)
      guard (100...199).contains(reply.status) else { return reply }
      rest = Data(reply.body)
    }
  }

  /// A raw upload of `file` with the acme key (or `key`).
  func upload(file: String, key: String = acmeKey, headers: [String] = []) throws -> LiveTesting.Reply {
    var arguments = ["--data-binary", "@" + file, "-H", Self.bearer(key)]
    for header in headers { arguments += ["-H", header] }
    return try curl("/v1/attachments", arguments)
  }
}

extension LiveTesting.Reply {
  /// The body as a JSON array of objects.
  var jsonList: [[String: Any]]? { try? JSONSerialization.jsonObject(with: body) as? [[String: Any]] }
  /// `code` of a problem body.
  var code: String? { json?["code"] as? String }
}

extension TestResponse {
  /// `code` of a problem body.
  var code: String? { json?["code"] as? String }
}
