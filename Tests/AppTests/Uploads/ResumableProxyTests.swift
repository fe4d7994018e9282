import AttachdTesting
import Foundation
import TestSupport
import Testing

@testable import App

/// The interrupted-and-resumed flows of every interop version through HAProxy on loopback in
/// front of attachd, as `docker-compose.yml` deploys it: HAProxy relays the `104` (nginx 1.22
/// takes it for the final answer), and the upload URL names the proxy, from the `Host` it passes.
@Suite(
  .serialized, .timeLimit(.minutes(3)),
  .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
  .enabled(if: HAProxy.executable != nil, "skipped: haproxy not installed (Scripts/install-deps)"))
struct ResumableProxyTests {
  typealias Interop = ResumableInteropTests

  @Test(arguments: ResumableInteropTests.versions)
  func aCutUploadResumedThroughHAProxyGivesThePlainRecord(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let proxy = try HAProxy(backends: [Interop.port(server)])
    defer { proxy.stop() }
    let client = ResumableClient(version: version, key: AttachmentServer.acmeKey, port: proxy.port)
    let body = [UInt8](try Corpus.data(Interop.jpeg))
    let resumed = try client.interruptedUpload(body, cut: body.count / 2)
    #expect(resumed.interim.status == 104)
    let location = try #require(resumed.interim["Location"])
    #expect(location.hasPrefix("http://127.0.0.1:\(proxy.port)/v1/uploads/upl_"), "the URL names the proxy")
    #expect(resumed.offset.status == 204)
    // Whatever HAProxy had passed on when the client dropped: when the client goes, HAProxy resets
    // its side to attachd, so bytes still in its buffers are lost (under load, the 100 ms the
    // client waits before dropping is not always enough for all of them). Never more than was sent.
    let offset = Int(resumed.offset["Upload-Offset"] ?? "") ?? -1
    #expect(offset > 0 && offset <= body.count / 2, "offset \(offset) of \(body.count / 2) sent")
    #expect(resumed.final.status == 201)
    #expect(Interop.facts(resumed.final.json) == (try Interop.plainFacts(server, Interop.jpeg)))
  }

  @Test(arguments: [3, 8])
  func aWholeBodyThroughHAProxyGetsThe104BeforeItsBodyAndThenTheRecord(version: Int) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let proxy = try HAProxy(backends: [Interop.port(server)])
    defer { proxy.stop() }
    let client = ResumableClient(version: version, key: AttachmentServer.acmeKey, port: proxy.port)
    let body = [UInt8](try Corpus.data(Interop.jpeg))
    let connection = try TestConnection.live(port: proxy.port)
    try connection.send(client.creation(length: body.count, extra: ["X-Forwarded-Proto: https"]))
    let interim = try connection.readResponse()
    #expect(interim.status == 104)
    #expect(interim["Upload-Draft-Interop-Version"] == String(version))
    // The proxy said the client spoke HTTPS to it.
    #expect(interim["Location"]?.hasPrefix("https://127.0.0.1:\(proxy.port)/v1/uploads/") == true)
    try connection.send(body)
    let final = try connection.readFinal()
    #expect(final.status == 201)
    #expect(Interop.facts(final.json) == (try Interop.plainFacts(server, Interop.jpeg)))
  }

  @Test func theCommittedHAProxyConfigurationIsValid() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let config = root.appendingPathComponent("Config/haproxy.cfg").path
    let outcome = try ChildProcess.run(
      HAProxy.executable!, ["-c", "-f", config], timeout: 30, checked: false)
    #expect(outcome.status == 0, "\(outcome.output)")
  }
}
