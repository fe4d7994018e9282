import Foundation
import Glibc
import ImageCodecs
import TestSupport
import Testing

@testable import ImagePipeline

/// What renditions cost: CPU seconds of an upload's pipeline run with and without every profile,
/// and of making one profile later from the stored default. Opt-in (ATTACHD_BENCH_PROFILES=1):
///
///     ATTACHD_BENCH_PROFILES=1 swift test --skip-build --filter ModelProfileBenchmarks
@Suite(
  .enabled(
    if: corpusPresent && ProcessInfo.processInfo.environment["ATTACHD_BENCH_PROFILES"] == "1",
    "set ATTACHD_BENCH_PROFILES=1 (and have the corpus)"))
struct ModelProfileBenchmarks {
  /// CPU seconds this thread spent in `body`, best of `rounds`.
  static func cpu(rounds: Int = 5, _ body: () throws -> Void) rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<rounds {
      var start = timespec()
      var end = timespec()
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
      try body()
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end)
      best = min(best, Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9)
    }
    return best
  }

  @Test func renditionCost() throws {
    let pipeline = try Pipeline()
    for file in ["jpeg-iphone6-gps.jpg", "jpeg-orient-6.jpg", "heic-iphone13pro-grid-depth-gps.heic"] {
      let input = try corpusBytes(file)
      let plain = try Self.cpu { _ = try pipeline.process(input) }
      let all = try Self.cpu { _ = try pipeline.process(input, profiles: ModelProfile.allCases) }
      let stored = try pipeline.process(input).jpeg
      let later = try Self.cpu { _ = try pipeline.renditions(ofStored: stored, profiles: [.anthropic]) }
      print(
        String(
          format: "%@: upload %.1f ms, with all profiles %.1f ms (+%.1f), anthropic later %.1f ms", file,
          plain * 1000, all * 1000, (all - plain) * 1000, later * 1000))
    }
  }
}
