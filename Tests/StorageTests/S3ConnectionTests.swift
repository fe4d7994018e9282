import Foundation
import Storage
import Testing

/// Connection reuse: the client's idle libcurl handles keep their connections open.
@Suite(.timeLimit(.minutes(1)))
struct S3ConnectionTests {
  static func server() throws -> ScriptedHTTPServer {
    try ScriptedHTTPServer { _, _ in
      .respond(200, headers: [("Content-Length", "1"), ("Last-Modified", "Tue, 01 Dec 2026 19:12:42 GMT")])
    }
  }

  static func client(port: Int, idle: Int = 16) throws -> S3Client {
    try S3Client(
      configuration: S3Client.Configuration(
        endpoint: "http://127.0.0.1:\(port)", bucket: "reuse", accessKeyId: "AKIAREUSE", secretAccessKey: "s",
        maxIdleConnections: idle))
  }

  @Test func sequentialRequestsShareOneConnection() throws {
    let server = try Self.server()
    defer { server.stop() }
    let client = try Self.client(port: server.port)
    for _ in 0..<20 { #expect(try client.headObject("k")?.size == 1) }
    #expect(server.requests.count == 20)
    #expect(server.connectionCount == 1)
  }

  @Test func withoutIdleHandlesEveryRequestConnectsAgain() throws {
    let server = try Self.server()
    defer { server.stop() }
    let client = try Self.client(port: server.port, idle: 0)
    for _ in 0..<5 { _ = try client.headObject("k") }
    #expect(server.connectionCount == 5)
  }

  @Test func concurrentRequestsUseAtMostOneConnectionPerThread() throws {
    let server = try Self.server()
    defer { server.stop() }
    let client = try Self.client(port: server.port)
    let failures = Failures()
    onThreads(8) { worker in
      for _ in 0..<10 {
        do {
          if try client.headObject("k")?.size != 1 { failures.add("worker \(worker): wrong size") }
        } catch {
          failures.add("worker \(worker): \(error)")
        }
      }
    }
    #expect(failures.all.isEmpty, "\(failures.all)")
    #expect(server.requests.count == 80)
    #expect(server.connectionCount <= 8)
  }
}
