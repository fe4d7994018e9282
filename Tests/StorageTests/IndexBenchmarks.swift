import Foundation
import Storage
import Synchronization
import TestSupport
import Testing

/// Insert and lookup latency and throughput of each index, printed as a table.
///
/// Off unless `ATTACHD_BENCH_INDEX=1` (it takes about a minute and measures the machine):
///
///     ATTACHD_BENCH_INDEX=1 swift test --skip-build --filter IndexBenchmarks
///
/// PostgreSQL runs on a server of its own with fsync and synchronous_commit on (durable like
/// SQLite FULL) and again with them off (like the test server), over TCP on 127.0.0.1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["ATTACHD_BENCH_INDEX"] == "1"))
struct IndexBenchmarks {
  private static let serial = 2_000
  private static let threads = 8
  private static let perThread = 500

  @Test(.timeLimit(.minutes(10)))
  func insertAndLookupLatencyAndThroughput() throws {
    let directory = try TemporaryDirectory()
    let durable = try PostgresServer(fsync: true)
    let fast = try PostgresServer(fsync: false)
    let backends: [(String, () throws -> any AttachmentIndex)] = [
      ("SQLiteIndex FULL", { try SQLiteIndex(path: directory.path + "/full.sqlite") }),
      (
        "SQLiteIndex NORMAL",
        {
          try SQLiteIndex(configuration: .init(path: directory.path + "/normal.sqlite", synchronous: .normal))
        }
      ),
      ("PostgresIndex fsync on", { try PostgresIndex(url: durable.url(database: durable.createDatabase())) }),
      ("PostgresIndex fsync off", { try PostgresIndex(url: fast.url(database: fast.createDatabase())) }),
    ]
    var lines = [
      "index                    insert p50   p99    lookup p50   p99    | \(Self.threads) threads: inserts/s  lookups/s"
    ]
    for (name, make) in backends {
      let index = try make()
      var insertTimes: [Double] = []
      var lookupTimes: [Double] = []
      for number in 0..<Self.serial {
        let started = ContinuousClock.now
        try index.insert(record("att_s\(number)", blobSeed: UInt64(number)))
        insertTimes.append(Self.microseconds(ContinuousClock.now - started))
      }
      for number in 0..<Self.serial {
        let started = ContinuousClock.now
        let found = try index.attachment(tenant: "acme", id: "att_s\((number * 7) % Self.serial)", now: t0)
        lookupTimes.append(Self.microseconds(ContinuousClock.now - started))
        try #require(found != nil)
      }
      let insertRate = try Self.throughput { worker, number in
        try index.insert(record("att_t\(worker)_\(number)", blobSeed: UInt64(number % 50)))
      }
      let lookupRate = try Self.throughput { worker, number in
        _ = try index.attachment(
          tenant: "acme", id: "att_t\(worker)_\((number * 7) % Self.perThread)", now: t0)
      }
      lines.append(
        name.padding(toLength: 24, withPad: " ", startingAt: 0)
          + " \(Self.format(Self.percentile(insertTimes, 0.5)))  \(Self.format(Self.percentile(insertTimes, 0.99)))"
          + "     \(Self.format(Self.percentile(lookupTimes, 0.5)))  \(Self.format(Self.percentile(lookupTimes, 0.99)))"
          + "  | \(String(format: "%19.0f", insertRate))  \(String(format: "%9.0f", lookupRate))")
    }
    print(
      (["", "latency in µs, \(Self.serial) serial calls each; throughput over \(Self.threads) threads"]
        + lines)
        .joined(separator: "\n"))
  }

  /// Operations per second with `threads` threads each doing `perThread` calls of `body`.
  private static func throughput(_ body: @escaping @Sendable (Int, Int) throws -> Void) throws -> Double {
    let failures = Failures()
    let started = ContinuousClock.now
    onThreads(threads) { worker in
      do {
        for number in 0..<perThread { try body(worker, number) }
      } catch {
        failures.add("\(error)")
      }
    }
    let elapsed = ContinuousClock.now - started
    try #require(failures.all.isEmpty, "\(failures.all.prefix(2))")
    return Double(threads * perThread) / (microseconds(elapsed) / 1_000_000)
  }

  private static func microseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1_000_000 + Double(attoseconds) / 1_000_000_000_000
  }

  private static func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
  }

  private static func format(_ microseconds: Double) -> String { String(format: "%9.0f", microseconds) }
}
