import Foundation
import Glibc
import Testing

@testable import Storage

/// `kill -9` while uploads are being appended, in a real child process (this test binary,
/// re-run with `crashChildAppendsUntilKilled` selected). After a restart, every upload's offset
/// is at least what the child saw acknowledged and at most what it sent, every byte below the
/// offset is the byte that was sent, nothing lies past it in the spool file, and each upload
/// resumes at its offset to completion.
@Suite struct UploadCrashRecoveryTests {
  static let childDirectoryVariable = "ATTACHD_UPLOAD_CRASH_CHILD"
  static let configuration = UploadStoreConfiguration(writeBufferBytes: 16 << 10, commitBytes: 48 << 10)

  /// The bytes of upload number `n`: its length and content follow from `n` alone.
  static func content(_ n: UInt64) -> [UInt8] {
    sampleBytes(60_000 + Int(n % 7) * 23_000, seed: 1_000 + n)
  }

  @Test(.timeLimit(.minutes(1)))
  func acknowledgedAppendsSurviveKillNineAndEveryUploadResumes() throws {
    let directory = try TemporaryDirectory()
    let acknowledgements = directory.path + "/acks.log"
    let child = Process()
    child.executableURL = URL(
      fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    child.arguments = ["--testing-library", "swift-testing", "--filter", "crashChildAppendsUntilKilled"]
    var environment = ProcessInfo.processInfo.environment
    environment[Self.childDirectoryVariable] = directory.path
    child.environment = environment
    child.standardOutput = FileHandle.nullDevice
    child.standardError = FileHandle.nullDevice
    try child.run()

    let deadline = Date().addingTimeInterval(40)
    while Self.lines(acknowledgements).count < 300 && Date() < deadline && child.isRunning {
      usleep(20_000)
    }
    let wasRunning = child.isRunning
    kill(child.processIdentifier, SIGKILL)
    child.waitUntilExit()
    #expect(wasRunning, "the child stopped by itself before it was killed")
    #expect(child.terminationReason == .uncaughtSignal)

    // id → (upload number, highest acknowledged offset)
    var acknowledged: [String: (n: UInt64, offset: Int)] = [:]
    for line in Self.lines(acknowledgements) {
      let fields = line.split(separator: " ").map(String.init)
      try #require(fields.count == 3)
      let (id, n, offset) = (fields[0], try #require(UInt64(fields[1])), try #require(Int(fields[2])))
      acknowledged[id] = (n, max(offset, acknowledged[id]?.offset ?? 0))
    }
    #expect(acknowledged.count >= 8)

    let store = try FileUploadStore(
      dataDirectory: directory.path, index: SQLiteIndex(path: directory.path + "/index.sqlite"),
      configuration: Self.configuration)
    var resumed = 0
    for (id, (n, offset)) in acknowledged {
      let bytes = Self.content(n)
      let state = try #require(try store.state(tenant: "crash", id: id), "lost upload \(id)")
      #expect(state.offset >= offset, "upload \(id) lost acknowledged bytes")
      #expect(state.offset <= bytes.count)
      guard state.status == .receiving else { continue }
      // Nothing past the offset, and the bytes below it are the ones sent.
      let spool = try Data(contentsOf: URL(fileURLWithPath: store.spoolPath(id)))
      #expect(spool.count == state.offset)
      #expect(
        spool.elementsEqual(bytes[0..<min(spool.count, state.offset)]), "upload \(id) holds other bytes")
      try store.put(tenant: "crash", id, bytes[state.offset...], at: state.offset)
      #expect(
        try store.completedBytes(tenant: "crash", id).elementsEqual(bytes), "upload \(id) resumed wrong")
      resumed += 1
    }
    #expect(resumed > 0)
  }

  /// The child side: 8 threads each append uploads in 700-byte slices, flushing when asked
  /// (which commits every 48 KiB) and committing every 20 slices, and log `id n offset` after
  /// each flush or commit, until killed.
  @Test(.enabled(if: ProcessInfo.processInfo.environment[childDirectoryVariable] != nil))
  func crashChildAppendsUntilKilled() throws {
    let directory = ProcessInfo.processInfo.environment[Self.childDirectoryVariable]!
    let store = try FileUploadStore(
      dataDirectory: directory, index: SQLiteIndex(path: directory + "/index.sqlite"),
      configuration: Self.configuration)
    let log = open(directory + "/acks.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    try #require(log >= 0)
    // Bounded, so an orphaned child cannot run forever.
    let deadline = Date().addingTimeInterval(60)
    onThreads(8) { worker in
      var round: UInt64 = 0
      while Date() < deadline {
        round += 1
        let n = UInt64(worker) << 32 | round
        let bytes = Self.content(n)
        do {
          let upload = try store.create(
            NewUpload(
              tenant: "crash", length: n % 3 == 0 ? nil : bytes.count, maxLength: 1 << 20,
              protocolName: "test",
              lifetime: 3_600))
          let writer = try store.openWriter(tenant: "crash", id: upload.id, offset: 0, length: nil) {}
          var slices = 0
          for start in stride(from: 0, to: bytes.count, by: 700) {
            let outcome = try bytes[start..<min(start + 700, bytes.count)].withUnsafeBytes {
              try writer.append($0)
            }
            slices += 1
            guard outcome == .flushNeeded || slices % 20 == 0 else { continue }
            let committed = try outcome == .flushNeeded ? writer.flush() : writer.commit()
            // Like an offset sent to the client: written only once the commit returned.
            let line = Array("\(upload.id) \(n) \(committed.offset)\n".utf8)
            _ = line.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
          }
          // Most uploads are left unfinished, as phones on a train leave them.
          if round % 4 == 0 { try writer.close() }
        } catch {
          continue
        }
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
