import Foundation
import ImageCodecs

/// `attachd bench-hevc [--runs N] [--threads N] [--planes] FILE.hvcs…` (hidden: for
/// Scripts/bench-hevc).
/// Decodes every tile of each HVCS file (Scripts/bench/heif_tiles.py writes them from a HEIC)
/// with HEVCDecoder, one thread, and prints CPU seconds per run and the peak RSS, in the same
/// form as Scripts/bench/hevc-bare.c prints them for libavcodec alone on the same file.
/// `--planes` also copies each tile into 8-bit planes (`decodePlanes`), which the bare tool
/// does not do; `--threads` sets the decoder's threads (wall time is printed too).
enum BenchHEVCCommand {
  static func run(_ arguments: [String]) -> Int32 {
    var runs = 5
    var threads = 1
    var planes = false
    var files: [String] = []
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--runs":
        guard let value = rest.popFirst().flatMap({ Int($0) }), (1...1000).contains(value) else {
          return CLI.usageError("bench-hevc: --runs needs 1…1000")
        }
        runs = value
      case "--threads":
        guard let value = rest.popFirst().flatMap({ Int($0) }), (1...64).contains(value) else {
          return CLI.usageError("bench-hevc: --threads needs 1…64")
        }
        threads = value
      case "--planes": planes = true
      default: files.append(argument)
      }
    }
    guard !files.isEmpty else { return CLI.usageError("bench-hevc: no HVCS file given") }
    for file in files {
      do {
        let (record, tiles) = try read(file)
        var times: [Double] = []
        var walls: [Duration] = []
        for _ in 0..<runs {
          let start = cpuSeconds()
          let wallStart = ContinuousClock.now
          let decoder = try HEVCDecoder(configurationRecord: record, configuration: .init(threads: threads))
          for tile in tiles {
            if planes {
              _ = try decoder.decodePlanes(tile)
            } else {
              try decoder.decode(tile) { frame in _ = frame.format }
            }
          }
          times.append(cpuSeconds() - start)
          walls.append(ContinuousClock.now - wallStart)
        }
        times.sort()
        walls.sort()
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        print(
          "attachd bench-hevc: \(tiles.count) tiles, \(runs) runs: CPU s min \(format(times[0]))"
            + " median \(format(times[runs / 2])), peak RSS \(usage.ru_maxrss) KiB;"
            + " wall s median \(format(Double(walls[runs / 2].components.attoseconds) / 1e18 + Double(walls[runs / 2].components.seconds)))"
        )
      } catch {
        CLI.printError("attachd bench-hevc: \(file): \(error)")
        return 1
      }
    }
    return 0
  }

  struct BadFile: Error, CustomStringConvertible {
    var description: String
  }

  /// The hvcC record and the tile samples (slices of the file's bytes) of an HVCS file.
  static func read(_ path: String) throws -> ([UInt8], [ArraySlice<UInt8>]) {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    var at = 0
    func take(_ count: Int) throws -> ArraySlice<UInt8> {
      guard count >= 0, count <= bytes.count - at else { throw BadFile(description: "truncated HVCS file") }
      defer { at += count }
      return bytes[at..<at + count]
    }
    func uint32() throws -> Int { try take(4).reduce(0) { $0 << 8 | Int($1) } }
    guard try take(4).elementsEqual("HVCS".utf8) else { throw BadFile(description: "not an HVCS file") }
    let record = Array(try take(try uint32()))
    let count = try uint32()
    let tiles = try (0..<count).map { _ in try take(try uint32()) }
    return (record, tiles)
  }

  static func cpuSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
  }

  static func format(_ seconds: Double) -> String { String(format: "%.4f", seconds) }
}
