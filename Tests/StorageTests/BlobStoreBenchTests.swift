import Crypto
import Foundation
import Storage
import TestSupport
import Testing

/// PUT and GET throughput of 1 MB and 20 MB blobs, S3BlobStore on a local SeaweedFS against
/// FileBlobStore, run by hand: `ATTACHD_S3_BENCH=1 swift test --filter BlobStoreBenchTests`.
/// Each put stores new content (no deduplication); each get streams the whole blob to a sink
/// that only counts, and once more into an array (`read`).
@Suite(
  .serialized, .enabled(if: ProcessInfo.processInfo.environment["ATTACHD_S3_BENCH"] != nil),
  .timeLimit(.minutes(5)))
struct BlobStoreBenchTests {
  struct Figures {
    var put = 0.0
    var stream = 0.0
    var read = 0.0
  }

  static func measure(_ store: any BlobStore, size: Int, rounds: Int) throws -> Figures {
    // One random block, a different first word per round: distinct content, made fast.
    let block = SecureRandom.bytes(size)
    let blobs = (0..<rounds).map { round -> [UInt8] in
      var blob = block
      withUnsafeBytes(of: UInt64(round).littleEndian) { blob.replaceSubrange(0..<8, with: $0) }
      return blob
    }
    var figures = Figures()
    var hashes: [BlobHash] = []
    var started = Date()
    for blob in blobs { hashes.append(try store.put(blob)) }
    figures.put = Date().timeIntervalSince(started)
    started = Date()
    var total = 0
    for hash in hashes { try store.read(hash) { total += $0.count } }
    figures.stream = Date().timeIntervalSince(started)
    #expect(total == size * rounds)
    started = Date()
    for hash in hashes { #expect(try store.read(hash).count == size) }
    figures.read = Date().timeIntervalSince(started)
    for hash in hashes { try store.delete(hash) }
    return figures
  }

  @Test func putAndGetThroughput() throws {
    let directory = try TemporaryDirectory()
    let stores: [(String, any BlobStore)] = [
      ("FileBlobStore", try FileBlobStore(root: directory.path)),
      (
        "S3BlobStore",
        try S3BlobStore(configuration: S3BlobStore.Configuration(client: SharedBucket.configuration("bench")))
      ),
    ]
    var report =
      "store          size    rounds  PUT MB/s (ms each)  GET stream MB/s (ms)  GET read MB/s (ms)\n"
    for (size, rounds) in [(1_000_000, 40), (20_000_000, 6)] {
      for (name, store) in stores {
        _ = try Self.measure(store, size: size, rounds: 2)  // warm-up: connections, shard directories
        let figures = try Self.measure(store, size: size, rounds: rounds)
        let megabytes = Double(size * rounds) / 1e6
        func cell(_ seconds: Double) -> String {
          String(format: "%8.0f (%6.1f)", megabytes / seconds, seconds * 1000 / Double(rounds))
        }
        report +=
          name.padding(toLength: 15, withPad: " ", startingAt: 0)
          + String(format: "%4d MB  %6d  ", size / 1_000_000, rounds)
          + "\(cell(figures.put))    \(cell(figures.stream))      \(cell(figures.read))\n"
      }
    }
    print(report)
  }
}
