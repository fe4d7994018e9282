import AttachdTesting
import Foundation
import Glibc
import Sandbox
import Synchronization
import TestSupport
import Testing

@testable import App

/// The decode sandbox under the real server: a decoding child locked down as promised, killed
/// from outside mid-decode (its request answered, the server serving on), a killed helper
/// replaced within seconds, and `attachd sandbox check` on this machine.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SandboxedUploadTests {
  /// The 200 MP Samsung HEIC: a few seconds of decode, long enough to look at its child.
  static let slowFile = "heic-samsung-200mp-irot.heic"
  static let quickFile = "jpeg-orient-1.jpg"

  static func corpusPath(_ name: String) throws -> String {
    try #require(Corpus.directory, "\(Corpus.skipReason)").appendingPathComponent(name).path
  }

  /// An answer that arrives on another thread.
  final class Answer: Sendable {
    let slot = Mutex<TestResponse?>(nil)

    /// The answer, waiting up to `seconds` for it.
    func wait(seconds: Double = 30) -> TestResponse? {
      let deadline = Date().addingTimeInterval(seconds)
      while Date() < deadline {
        if let response = slot.withLock({ $0 }) { return response }
        usleep(10_000)
      }
      return nil
    }
  }

  /// Uploads `file` over the socket on a thread; the answer lands in the returned box.
  static func uploadInBackground(_ server: AttachmentServer, _ file: String) -> Answer {
    let answer = Answer()
    let live = server.live
    let path = file
    Thread.detachNewThread {
      let bytes = (try? Data(contentsOf: URL(fileURLWithPath: path))).map { [UInt8]($0) } ?? []
      let response = try? live.execute(
        "POST", "/v1/attachments", headers: AttachmentServer.auth(AttachmentServer.acmeKey),
        body: .bytes(bytes))
      answer.slot.withLock { $0 = response }
    }
    return answer
  }

  /// The decoding child of the server's helper, once it has locked itself down.
  static func decodingChild(_ server: AttachmentServer, seconds: Double = 10) -> Int32? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if let helper = server.app.sandbox.helperPID,
        let child = SandboxProcesses.descendants(of: helper).last(where: {
          SandboxProcesses.status(of: $0)?["Seccomp"] == "2"
        })
      {
        return child
      }
      usleep(5_000)
    }
    return nil
  }

  @Test(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
  func theDecodingChildRunsUnderSeccompWithNoNewPrivilegesNotAsRootAndOnlyItsOwnDescriptors() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let answer = Self.uploadInBackground(server, try Self.corpusPath(Self.slowFile))
    let child = try #require(Self.decodingChild(server), "no decoding child seen")
    let status = try #require(SandboxProcesses.status(of: child))
    let descriptors = SandboxProcesses.descriptors(of: child)
    #expect(status["Seccomp"] == "2")
    #expect(status["NoNewPrivs"] == "1")
    let uid = status["Uid"]?.split(separator: "\t").first.map(String.init)
    if getuid() == 0 { #expect(uid != "0", "the child runs as root") }
    // Its diagnostics pipe, its input and its output: nothing of the server's.
    #expect(descriptors.sorted() == [2, 3, 4], "\(descriptors)")
    #expect(answer.wait()?.status == 201)
  }

  @Test(
    .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
    arguments: [(SIGSEGV, 422, "corrupt"), (SIGABRT, 422, "corrupt"), (SIGKILL, 503, "sandbox_unavailable")])
  func aChildKilledFromOutsideMidDecodeCostsOneAnswerAndTheServerServesOn(
    signal: Int32, status: Int, code: String
  ) throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    let answer = Self.uploadInBackground(server, try Self.corpusPath(Self.slowFile))
    let child = try #require(Self.decodingChild(server), "no decoding child seen")
    kill(child, signal)
    let response = try #require(answer.wait(), "the upload was never answered")
    #expect(response.status == status && response.code == code)
    #expect(try server.post(file: try Self.corpusPath(Self.quickFile), via: server.live).status == 201)
  }

  @Test(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
  func aKilledHelperIsReplacedAndTheNextUploadSucceedsWithinFiveSeconds() throws {
    let server = try AttachmentServer()
    defer { server.stop() }
    #expect(server.app.sandbox.waitUntilReady(seconds: 10))
    let helper = try #require(server.app.sandbox.helperPID)
    kill(helper, SIGKILL)
    let killed = Date()
    var stored = false
    while !stored && Date().timeIntervalSince(killed) < 5 {
      stored = try server.post(file: try Self.corpusPath(Self.quickFile), via: server.live).status == 201
      if !stored { usleep(50_000) }
    }
    #expect(stored, "no upload stored within 5 s of the helper's death")
    #expect(server.app.sandbox.helperPID != helper)
  }

  @Test func sandboxCheckPassesOnThisMachine() throws {
    let binary = try #require(BuiltExecutable.attachd, "attachd is not built")
    let (status, output) = try LiveTesting.run(binary, ["sandbox", "check", "--json"], timeout: 60)
    let text = String(decoding: output, as: UTF8.self)
    #expect(status == 0, "\(text)")
    let report = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
    #expect(report["passed"] as? Bool == true)
  }
}
