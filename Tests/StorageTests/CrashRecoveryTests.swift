import Crypto
import Dispatch
import Foundation
import Glibc
import Testing

@testable import Storage

/// `kill -9` during concurrent stores, in a real child process (this test binary, re-run with
/// `crashChildStoresUntilKilled` selected): every store the child reported as finished is
/// retrievable byte-for-byte afterwards, no blob is half-written, and `tmp/` is cleaned.
@Suite struct CrashRecoveryTests {
  static let childDirectoryVariable = "ATTACHD_STORAGE_CRASH_CHILD"

  @Test(.timeLimit(.minutes(1)))
  func acknowledgedStoresSurviveKillNineAndNothingPartialIsVisible() throws {
    let directory = try TemporaryDirectory()
    let acknowledgements = directory.path + "/acks.log"
    let child = Process()
    child.executableURL = URL(
      fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    child.arguments = ["--testing-library", "swift-testing", "--filter", "crashChildStoresUntilKilled"]
    var environment = ProcessInfo.processInfo.environment
    environment[Self.childDirectoryVariable] = directory.path
    child.environment = environment
    child.standardOutput = FileHandle.nullDevice
    child.standardError = FileHandle.nullDevice
    try child.run()

    // Let the child acknowledge a good number of stores, then kill it mid-flight.
    let deadline = Date().addingTimeInterval(40)
    while Self.lines(acknowledgements).count < 150 && Date() < deadline && child.isRunning {
      usleep(20_000)
    }
    let wasRunning = child.isRunning
    kill(child.processIdentifier, SIGKILL)
    child.waitUntilExit()
    #expect(wasRunning, "the child stopped by itself before it was killed")
    #expect(child.terminationReason == .uncaughtSignal)

    let acknowledged = Self.lines(acknowledgements)
    #expect(acknowledged.count >= 150)

    let attachments = try AttachmentStore.embedded(directory: directory.path + "/store")
    #expect(directory.files(under: "store/tmp").isEmpty)
    for line in acknowledged {
      let fields = line.split(separator: " ").map(String.init)
      try #require(fields.count == 3)
      let record = try #require(try attachments.get(tenant: fields[0], id: fields[1]), "lost \(fields[1])")
      let bytes = try attachments.read(record)
      #expect(Hex.encode(SHA256.hash(bytes)) == fields[2])
    }
    // Every blob visible under its final name holds exactly the bytes its name promises.
    var visible: [BlobHash] = []
    try attachments.blobs.forEachBlob { visible.append($0.hash) }
    #expect(!visible.isEmpty)
    for hash in visible {
      #expect(try BlobHash.of(attachments.blobs.read(hash)) == hash)
    }
    #expect(try attachments.statistics().attachments >= acknowledged.count)
    // And no row at all, acknowledged or not, refers to a blob that is not there.
    let index = try SQLiteIndex(path: directory.path + "/store/index.sqlite")
    let referenced = try index.read { try $0.query("SELECT DISTINCT blob FROM attachments") }
    for row in referenced {
      let hash = try #require(row.first?.text.flatMap(BlobHash.init(hex:)))
      #expect(try attachments.blobs.exists(hash), "row without blob \(hash)")
    }
  }

  /// The child side: stores from 16 threads until killed, appending one line per finished store.
  @Test(.enabled(if: ProcessInfo.processInfo.environment[childDirectoryVariable] != nil))
  func crashChildStoresUntilKilled() throws {
    let directory = ProcessInfo.processInfo.environment[Self.childDirectoryVariable]!
    let attachments = try AttachmentStore.embedded(directory: directory + "/store")
    let log = open(directory + "/acks.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    try #require(log >= 0)
    // Bounded, so an orphaned child cannot run forever.
    let deadline = Date().addingTimeInterval(60)
    onThreads(16) { worker in
      var round: UInt64 = 0
      while Date() < deadline {
        round += 1
        // Every eighth image repeats, so deduplicated stores are interrupted too.
        let seed = round % 8 == 0 ? 42 : UInt64(worker) << 32 | round
        let bytes = sampleBytes(20_000 + Int(round % 50) * 1_000, seed: seed)
        guard
          let record = try? attachments.store(
            tenant: "t\(worker)", bytes: bytes, width: 1, height: 1, source: sampleSource)
        else { continue }
        // Like a 201 on the socket: written only after the store returned.
        let line = Array("\(record.tenant) \(record.id) \(record.blob.hex)\n".utf8)
        _ = line.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
      }
    }
  }

  private static func lines(_ path: String) -> [String] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    // A line cut by the kill has no newline yet: it was never acknowledged.
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    return data.last == UInt8(ascii: "\n") ? lines : Array(lines.dropLast())
  }
}
