import Foundation
import ImageCodecs
import TestSupport
import Testing

/// Timings for the report, not pass/fail gates. Run with ATTACHD_BENCH=1.
@Suite(
  .enabled(if: Corpus.directory != nil, "skipped: corpus not present"),
  .enabled(if: ProcessInfo.processInfo.environment["ATTACHD_BENCH"] != nil, "bench: set ATTACHD_BENCH=1"))
struct CodecBenchmarks {
  /// Best-of-N CPU time of the process, all threads (the machine is shared: wall time is noisy).

  func time(_ label: String, runs: Int = 5, _ body: () throws -> Void) rethrows {
    var best = Double.infinity
    var bestWall = Duration.seconds(1_000)
    for _ in 0..<runs {
      let (cpu0, wall0) = (threadCPU(), ContinuousClock.now)
      try body()
      best = min(best, threadCPU() - cpu0)
      bestWall = min(bestWall, ContinuousClock.now - wall0)
    }
    print("BENCH \(label): best of \(runs): process CPU \(Int(best * 1000)) ms, wall \(bestWall)")
  }

  func threadCPU() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
  }

  @Test func jpegAndHEIF() throws {
    let photo = try Fixtures.corpus("jpeg-iphone6-gps.jpg")  // 3264×2448, 4:2:0
    try time("jpeg 12 MP full decode") { _ = try JPEGCodec.decode(photo) }
    try time("jpeg 12 MP decode at 6/8 (≥2048×1536)") {
      _ = try JPEGCodec.decode(photo, scaleToAtLeast: (2048, 1536))
    }
    try time("jpeg 12 MP decode at 4/8 (≥1600×1200)") {
      _ = try JPEGCodec.decode(photo, scaleToAtLeast: (1600, 1200))
    }
    try time("jpeg 12 MP full decode, again") { _ = try JPEGCodec.decode(photo) }
    try time("jpeg readHeader ×1000 (handle init + header)", runs: 3) {
      for _ in 0..<1000 { _ = try JPEGCodec.readHeader(photo) }
    }
    let frame = try JPEGCodec.decode(photo, scaleToAtLeast: (2048, 1536))
    try time("jpeg encode \(frame.width)×\(frame.height) q85 4:2:0") {
      _ = try JPEGCodec.encode(frame, quality: 85)
    }
    try time("tjTransform 12 MP rot180 (imperfect → trim)") {
      _ = try JPEGCodec.transform(photo, operation: .rot180, perfectOnly: false)
    }
    let p3 = try #require(
      HEIFCodec.primaryInfo(Fixtures.corpus("heic-iphone13pro-grid-depth-gps.heic")).colour.iccProfile)
    var copy = frame
    time("lcms Display P3 → sRGB on \(frame.width)×\(frame.height)") {
      ColourTransform.toSRGB(&copy, iccProfile: p3)
    }
    let heic = try Fixtures.corpus("heic-iphone13pro-grid-depth-gps.heic")
    try time("heic 12 MP grid decode, 2 threads", runs: 3) { _ = try HEIFCodec.decode(heic) }
    try time("heic 12 MP grid decode, 1 thread", runs: 3) {
      _ = try HEIFCodec.decode(heic, options: .init(decodingThreads: 1))
    }
  }
}
