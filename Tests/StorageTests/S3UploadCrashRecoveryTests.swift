import Foundation
import Glibc
import TestSupport
import Testing

@testable import Storage

/// `kill -9` of a node appending to uploads in S3 + PostgreSQL (this test binary re-run as a
/// child with `s3CrashChildAppendsUntilKilled` selected). A restart of the same node then finds
/// every upload at least at the offset the child saw acknowledged and at most at what it sent,
/// and each upload resumes there and completes to exactly the bytes sent: parts, tails and rows
/// left by the kill never show a byte that was not acknowledged.
@Suite struct S3UploadCrashRecoveryTests {
  static let childVariable = "ATTACHD_S3_UPLOAD_CRASH_CHILD"
  static let configuration = UploadStoreConfiguration(writeBufferBytes: 16 << 10, commitBytes: 1 << 20)

  /// The bytes of upload number `n`: mostly small (tail objects only); worker 0's first and
  /// every fourth after it over a part (a multipart upload cut by the kill).
  static func content(_ n: UInt64) -> [UInt8] {
    sampleBytes(size(n), seed: (isLarge(n) ? 2_000 : 1_000) + n)
  }

  static func isLarge(_ n: UInt64) -> Bool { n >> 32 == 0 && n % 4 == 1 }

  static func size(_ n: UInt64) -> Int { isLarge(n) ? 6 << 20 : 60_000 + Int(n % 7) * 23_000 }

  /// Where the child finds the servers: one line per field (the child is this test binary).
  struct Backing {
    var url: String
    var client: S3Client.Configuration
    var keyPrefix: String
    var directory: String

    var encoded: String {
      [
        url, client.endpoint, client.bucket, client.region, client.accessKeyId, client.secretAccessKey,
        keyPrefix, directory,
      ].joined(separator: "\n")
    }

    init(url: String, client: S3Client.Configuration, keyPrefix: String, directory: String) {
      self.url = url
      self.client = client
      self.keyPrefix = keyPrefix
      self.directory = directory
    }

    init?(encoded: String) {
      let fields = encoded.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      guard fields.count == 8 else { return nil }
      url = fields[0]
      client = S3Client.Configuration(
        endpoint: fields[1], bucket: fields[2], region: fields[3], accessKeyId: fields[4],
        secretAccessKey: fields[5])
      keyPrefix = fields[6]
      directory = fields[7]
    }

    func open() throws -> S3UploadStore {
      try S3UploadStore(
        client: S3Client(configuration: client), index: PostgresIndex(url: url),
        settings: S3UploadStore.Settings(
          keyPrefix: keyPrefix, temporaryDirectory: directory + "/tmp", node: "a"),
        configuration: S3UploadCrashRecoveryTests.configuration)
    }
  }

  @Test(.timeLimit(.minutes(2)))
  func acknowledgedAppendsSurviveKillNineAndEveryUploadResumes() throws {
    let directory = try TemporaryDirectory()
    let backing = Backing(
      url: try PostgresTestDatabase.freshURL(), client: try SharedBucket.configuration("uploads"),
      keyPrefix: SharedBucket.uniquePrefix("crash"), directory: directory.path)
    _ = try backing.open()  // migrates the schema before the child's threads start
    let acknowledgements = directory.path + "/acks.log"
    let child = Process()
    child.executableURL = URL(
      fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    child.arguments = ["--testing-library", "swift-testing", "--filter", "s3CrashChildAppendsUntilKilled"]
    var environment = ProcessInfo.processInfo.environment
    environment[Self.childVariable] = backing.encoded
    child.environment = environment
    child.standardOutput = FileHandle.nullDevice
    child.standardError = FileHandle.nullDevice
    try child.run()

    let deadline = Date().addingTimeInterval(60)
    // Enough acknowledgements, one of them past a large upload's first part.
    func enough() -> Bool {
      let lines = Self.lines(acknowledgements)
      return lines.count >= 200
        && lines.contains { line in
          let fields = line.split(separator: " ")
          return fields.count == 3 && UInt64(fields[1]).map(Self.isLarge) == true
            && (Int(fields[2]) ?? 0) > 5 << 20
        }
    }
    while !enough() && Date() < deadline && child.isRunning { usleep(50_000) }
    let wasRunning = child.isRunning
    kill(child.processIdentifier, SIGKILL)
    child.waitUntilExit()
    #expect(wasRunning, "the child stopped by itself before it was killed")

    var acknowledged: [String: (n: UInt64, offset: Int)] = [:]
    for line in Self.lines(acknowledgements) {
      let fields = line.split(separator: " ").map(String.init)
      try #require(fields.count == 3)
      let (id, n, offset) = (fields[0], try #require(UInt64(fields[1])), try #require(Int(fields[2])))
      acknowledged[id] = (n, max(offset, acknowledged[id]?.offset ?? 0))
    }
    #expect(acknowledged.count >= 8)
    #expect(acknowledged.values.contains { Self.isLarge($0.n) && $0.offset > 5 << 20 })

    // The same node restarts: its dead writers' leases are released at once.
    let store = try backing.open()
    var resumed = 0
    for (id, (n, offset)) in acknowledged {
      let bytes = Self.content(n)
      let state = try #require(try store.state(tenant: "crash", id: id), "lost upload \(id)")
      #expect(state.offset >= offset, "upload \(id) lost acknowledged bytes")
      #expect(state.offset <= bytes.count)
      guard state.status == .receiving else { continue }
      try store.put(tenant: "crash", id, bytes[state.offset...], at: state.offset)
      #expect(try store.completedBytes(tenant: "crash", id) == bytes, "upload \(id) resumed wrong")
      resumed += 1
    }
    #expect(resumed > 0)
  }

  /// The child: 8 threads append uploads in 700-byte slices (64 KiB for the large ones),
  /// flushing when asked and committing every 20 slices, and log `id n offset` after each
  /// flush or commit, until killed.
  @Test(.enabled(if: ProcessInfo.processInfo.environment[childVariable] != nil))
  func s3CrashChildAppendsUntilKilled() throws {
    let backing = try #require(Backing(encoded: ProcessInfo.processInfo.environment[Self.childVariable]!))
    let store = try backing.open()
    let log = open(backing.directory + "/acks.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    try #require(log >= 0)
    // Bounded, so an orphaned child cannot run forever.
    let deadline = Date().addingTimeInterval(90)
    onThreads(8) { worker in
      var round: UInt64 = 0
      while Date() < deadline {
        round += 1
        let n = UInt64(worker) << 32 | round
        let bytes = Self.content(n)
        let slice = bytes.count > 5 << 20 ? 64 << 10 : 700
        do {
          let upload = try store.create(
            NewUpload(
              tenant: "crash", length: n % 3 == 0 ? nil : bytes.count, maxLength: 8 << 20,
              protocolName: "test",
              lifetime: 3_600))
          let writer = try store.openWriter(tenant: "crash", id: upload.id, offset: 0, length: nil) {}
          var slices = 0
          for start in stride(from: 0, to: bytes.count, by: slice) {
            let outcome = try bytes[start..<min(start + slice, bytes.count)].withUnsafeBytes {
              try writer.append($0)
            }
            slices += 1
            guard outcome == .flushNeeded || slices % 20 == 0 else { continue }
            let committed = try outcome == .flushNeeded ? writer.flush() : writer.commit()
            // Like an offset sent to the client: written only once the commit returned.
            let line = Array("\(upload.id) \(n) \(committed.offset)\n".utf8)
            _ = line.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
          }
          if round % 4 == 0 { try writer.close() }
        } catch {
          continue
        }
      }
    }
  }

  private static func lines(_ path: String) -> [String] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    return data.last == UInt8(ascii: "\n") ? lines : Array(lines.dropLast())
  }
}
