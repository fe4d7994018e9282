import Foundation
import Glibc
import Synchronization
import Testing

@testable import Storage

/// Measurements, not checks: run by `Scripts/bench-uploads` (`ATTACHD_UPLOAD_BENCH=1`), skipped
/// otherwise. Prints append throughput against a bare `pwrite` + `fdatasync` loop on the same
/// disk at the same commit granularity, and the memory of many writers holding full buffers.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ATTACHD_UPLOAD_BENCH"] != nil), .serialized)
struct UploadStoreBenchmarkTests {
  private static let environment = ProcessInfo.processInfo.environment
  private static let megabytes = Int(environment["ATTACHD_UPLOAD_BENCH_MB"] ?? "") ?? 64
  private static let rounds = Int(environment["ATTACHD_UPLOAD_BENCH_ROUNDS"] ?? "") ?? 3
  /// What one socket read hands the consumer.
  private static let slice = 64 << 10

  private static func directory() throws -> TemporaryDirectory {
    try TemporaryDirectory(under: environment["ATTACHD_UPLOAD_BENCH_DIR"])
  }

  private static func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
  }

  /// The floor: the same bytes written a buffer at a time, with an fdatasync every `commit` bytes.
  private static func bareLoop(_ bytes: [UInt8], buffer: Int, commit: Int, in directory: String) throws
    -> Double
  {
    let path = directory + "/bare"
    let fd = try FileSystem.open(path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
    defer {
      FileSystem.close(fd)
      _ = try? FileSystem.unlink(path)
    }
    return try seconds {
      try bytes.withUnsafeBytes { all in
        var uncommitted = 0
        for start in stride(from: 0, to: all.count, by: buffer) {
          let chunk = UnsafeRawBufferPointer(rebasing: all[start..<min(start + buffer, all.count)])
          try FileSystem.writeAll(fd, chunk, at: start, path: path)
          uncommitted += chunk.count
          if uncommitted >= commit || start + chunk.count == all.count {
            try FileSystem.fdatasync(fd, path: path)
            uncommitted = 0
          }
        }
      }
    }
  }

  /// One upload of `bytes` through a store writer, in 64 KiB slices, flushing when asked.
  private static func storeUpload(_ bytes: [UInt8], store: any UploadStore) throws -> Double {
    let upload = try store.create(
      NewUpload(
        tenant: "bench", length: bytes.count, maxLength: bytes.count, protocolName: "bench", lifetime: 3_600))
    let time = try seconds {
      let writer = try store.openWriter(tenant: "bench", id: upload.id, offset: 0, length: nil) {}
      try bytes.withUnsafeBytes { all in
        for start in stride(from: 0, to: all.count, by: slice) {
          let outcome = try writer.append(
            UnsafeRawBufferPointer(rebasing: all[start..<min(start + slice, all.count)]))
          if outcome == .flushNeeded { try writer.flush() }
        }
      }
      try writer.close()
    }
    try store.cancel(tenant: "bench", id: upload.id)
    return time
  }

  @Test func appendThroughputAgainstABareWriteAndFdatasyncLoop() throws {
    let bytes = sampleBytes(Self.megabytes << 20, seed: 1)
    let megabytes = Double(bytes.count) / Double(1 << 20)
    let buffer = 1 << 20
    print(
      "upload bench: \(Self.megabytes) MiB per run, \(Self.slice >> 10) KiB slices, \(buffer >> 10) KiB buffer,"
        + " best of \(Self.rounds); bare = pwrite per buffer + fdatasync per commit")
    let variants: [(name: String, synchronous: SQLiteIndex.Configuration.Synchronous, syncOffsets: Bool)] = [
      ("index FULL, default       ", .full, false),
      ("index FULL, syncOffsets on", .full, true),
      ("index NORMAL              ", .normal, false),
    ]
    for variant in variants {
      for commit in [1 << 20, 4 << 20, 8 << 20, 16 << 20] {
        let directory = try Self.directory()
        let store = try FileUploadStore(
          dataDirectory: directory.path,
          index: SQLiteIndex(
            configuration: .init(path: directory.path + "/index.sqlite", synchronous: variant.synchronous)),
          configuration: UploadStoreConfiguration(
            writeBufferBytes: buffer, commitBytes: commit, syncOffsetCommits: variant.syncOffsets))
        var bare = Double.infinity
        var stored = Double.infinity
        // Alternating rounds: on a shared machine, other work moves single rounds.
        for _ in 0..<Self.rounds {
          bare = min(bare, try Self.bareLoop(bytes, buffer: buffer, commit: commit, in: directory.path))
          stored = min(stored, try Self.storeUpload(bytes, store: store))
        }
        let line = String(
          format: "%@ commit every %2d MiB: bare %7.1f MiB/s  store %7.1f MiB/s  ratio %.2f",
          variant.name, commit >> 20, megabytes / bare, megabytes / stored, bare / stored)
        print(line)
      }
    }
  }

  /// The S3 + PostgreSQL store against the floor of its own design: the same bytes sent as
  /// 5 MiB parts of one multipart upload, nothing else. What the store adds is a tail object
  /// per commit (the bytes past the last part, up to 5 MiB) and the row's statements.
  @Test func s3AppendThroughputAgainstBareMultipartParts() throws {
    let bytes = sampleBytes(Self.megabytes << 20, seed: 3)
    let megabytes = Double(bytes.count) / Double(1 << 20)
    let directory = try Self.directory()
    let backing = try S3UploadBacking.forDirectory(directory.path)
    let index = try PostgresIndex(url: backing.url)
    let part = S3Client.minimumPartSize
    print(
      "upload bench: S3 + PostgreSQL, \(Self.megabytes) MiB per run, 1 MiB buffer; bare = 5 MiB parts only")
    for commit in [8 << 20, 32 << 20] {
      let store = try S3UploadStore(
        client: backing.client, index: index,
        settings: S3UploadStore.Settings(
          keyPrefix: backing.keyPrefix, temporaryDirectory: directory.path + "/tmp", node: "bench"),
        configuration: UploadStoreConfiguration(writeBufferBytes: 1 << 20, commitBytes: commit))
      var bare = Double.infinity
      var stored = Double.infinity
      for _ in 0..<Self.rounds {
        bare = min(
          bare,
          try Self.seconds {
            let upload = try backing.client.createMultipartUpload(backing.keyPrefix + "bare")
            try bytes.withUnsafeBytes { all in
              for (index, start) in stride(from: 0, to: all.count, by: part).enumerated() {
                let chunk = UnsafeRawBufferPointer(rebasing: all[start..<min(start + part, all.count)])
                _ = try backing.client.uploadPart(upload, number: index + 1, body: .bytes(chunk))
              }
            }
            try backing.client.abortMultipartUpload(upload)
          })
        stored = min(stored, try Self.storeUpload(bytes, store: store))
      }
      // The tails a commit every `commit` bytes writes: what lies past the last part each time.
      let tails = stride(from: commit, through: bytes.count, by: commit).reduce(0) { $0 + $1 % part }
      print(
        String(
          format:
            "S3 commit every %2d MiB: bare %6.1f MiB/s  store %6.1f MiB/s  ratio %.2f  tails PUT %.0f MiB",
          commit >> 20, megabytes / bare, megabytes / stored, bare / stored, Double(tails) / Double(1 << 20)))
    }
  }

  @Test func memoryOfManyWritersHoldingFullBuffers() throws {
    let writers = Int(Self.environment["ATTACHD_UPLOAD_BENCH_WRITERS"] ?? "") ?? 200
    let configuration = UploadStoreConfiguration()
    let directory = try Self.directory()
    let store = try FileUploadStore(
      dataDirectory: directory.path, index: SQLiteIndex(path: directory.path + "/index.sqlite"),
      configuration: configuration)
    let slice = sampleBytes(16 << 10, seed: 2)
    var open: [any UploadWriter] = []
    for _ in 0..<writers {
      let upload = try store.create(
        NewUpload(tenant: "bench", length: nil, maxLength: 64 << 20, protocolName: "bench", lifetime: 3_600))
      open.append(try store.openWriter(tenant: "bench", id: upload.id, offset: 0, length: nil) {})
    }
    let before = Self.residentBytes()
    // Slow uploads at their worst: every writer one slice short of a flush, none flushed.
    let perWriter = configuration.writeBufferBytes - slice.count
    for _ in 0..<(perWriter / slice.count) {
      for writer in open { _ = try slice.withUnsafeBytes { try writer.append($0) } }
    }
    let during = Self.residentBytes()
    let buffered = open.reduce(0) { $0 + $1.receivedOffset }
    for writer in open { try writer.close() }
    open.removeAll()
    let after = Self.residentBytes()
    let mib = { (bytes: Int) in Double(bytes) / Double(1 << 20) }
    print(
      String(
        format:
          "upload bench: %d writers, %d KiB buffers: %.1f MiB buffered, RSS +%.1f MiB (%.0f KiB per writer),"
          + " %.1f MiB after closing all; peak RSS of the process %.1f MiB",
        writers, configuration.writeBufferBytes >> 10, mib(buffered), mib(during - before),
        Double(during - before) / 1024 / Double(writers), mib(after - before), mib(Self.peakResidentBytes())))
  }

  @Test func memoryOfManyWritersStreamingAtOnce() throws {
    let writers = Int(Self.environment["ATTACHD_UPLOAD_BENCH_WRITERS"] ?? "") ?? 200
    let threads = 20
    let perUpload = 4 << 20
    let directory = try Self.directory()
    let store = try FileUploadStore(
      dataDirectory: directory.path, index: SQLiteIndex(path: directory.path + "/index.sqlite"))
    let slice = sampleBytes(Self.slice, seed: 3)
    let baseline = Self.residentBytes()
    let peak = Mutex(0)
    let done = Atomic<Bool>(false)
    let sampler = Thread {
      while !done.load(ordering: .relaxed) {
        let resident = Self.residentBytes()
        peak.withLock { $0 = max($0, resident) }
        usleep(2_000)
      }
    }
    sampler.start()
    let failures = Failures()
    // Each thread interleaves its share of uploads slice by slice, as a loop serves connections.
    let time = Self.seconds {
      onThreads(threads) { thread in
        do {
          var open: [any UploadWriter] = []
          for _ in 0..<(writers / threads) {
            let upload = try store.create(
              NewUpload(
                tenant: "bench", length: perUpload, maxLength: perUpload, protocolName: "bench", lifetime: 60)
            )
            open.append(try store.openWriter(tenant: "bench", id: upload.id, offset: 0, length: nil) {})
          }
          for _ in 0..<(perUpload / slice.count) {
            for writer in open where try slice.withUnsafeBytes({ try writer.append($0) }) == .flushNeeded {
              try writer.flush()
            }
          }
          for writer in open { try writer.close() }
        } catch {
          failures.add("thread \(thread): \(error)")
        }
      }
    }
    done.store(true, ordering: .relaxed)
    #expect(failures.all.isEmpty, "\(failures.all)")
    let total = Double(writers * perUpload) / Double(1 << 20)
    print(
      String(
        format: "upload bench: %d writers streaming %d MiB each from %d threads: %.0f MiB in %.1f s,"
          + " peak RSS +%.1f MiB over the start",
        writers, perUpload >> 20, threads, total, time,
        Double(peak.withLock { $0 } - baseline) / Double(1 << 20)))
  }

  private static func residentBytes() -> Int { statusField("VmRSS:") }
  private static func peakResidentBytes() -> Int { statusField("VmHWM:") }

  private static func statusField(_ name: String) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
      let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
      let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return 0 }
    return kilobytes * 1024
  }
}
