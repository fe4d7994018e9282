import Foundation
import ImagePipeline
import PipelineSandbox
import Sandbox
import Server
import Synchronization

/// `attachd bench-sandbox [--runs N] [--warmup N] FILE…` (hidden: for Scripts/bench-pipeline).
///
/// What the decode sandbox costs a running server per image: each file goes through
/// `SandboxedPipeline` (one helper started once, a forked child per image, as `serve` does) and
/// `InProcessPipeline` (the same pipeline in this process), alternating, after a warm-up of
/// both. The helper's start-up is not counted: a server pays it once.
///
/// CPU counts everything the image cost: this process (`RUSAGE_SELF`: the admission, the
/// memory files, the output's re-verification, the reader thread) plus the helper's own CPU
/// and its reaped children's (`/proc/<helper>/stat` utime + stime + cutime + cstime; the helper
/// reaps each child before it answers, so a finished run's child is in its cutime/cstime).
/// `wait4` on a one-shot `attachd process` would miss the helper and its children entirely.
enum BenchSandboxCommand {
  /// One measured image: CPU and wall seconds, and for the sandbox what the helper saw.
  struct Sample {
    var cpu: Double
    var wall: Double
    var childCPU: Double = 0
    var fork: Double = 0
    /// Minor page faults: this process's, plus the helper's and its reaped children's.
    var faults: Double = 0
  }

  static func run(_ arguments: [String]) -> Int32 {
    var runs = 10
    var warmup = 2
    var files: [String] = []
    var rest = arguments[...]
    while let argument = rest.popFirst() {
      switch argument {
      case "--runs", "--warmup":
        guard let value = rest.popFirst().flatMap({ Int($0) }), (0...1000).contains(value) else {
          return CLI.usageError("bench-sandbox: \(argument) needs 0…1000")
        }
        if argument == "--runs" { runs = max(1, value) } else { warmup = value }
      default: files.append(argument)
      }
    }
    guard !files.isEmpty else { return CLI.usageError("bench-sandbox: no image given") }
    // What `serve` does before it starts: freed buffers stay for the next image.
    MallocTuning.keepFreedBuffersForReuse()
    let pipeline: Pipeline
    do { pipeline = try Pipeline(configuration: Pipeline.Configuration()) } catch {
      CLI.printError("attachd bench-sandbox: \(error.message)")
      return 1
    }
    let sandbox = Sandbox(configuration: SandboxConfiguration())
    defer { sandbox.stop() }
    guard sandbox.waitUntilReady(seconds: 10), let helper = sandbox.helperPID else {
      CLI.printError("attachd bench-sandbox: no sandbox helper: \(sandbox.lastFailure ?? "not ready")")
      return 1
    }
    let lastExit = Mutex<SandboxExit?>(nil)
    let sandboxed = SandboxedPipeline(pipeline: pipeline, sandbox: sandbox) { report in
      lastExit.withLock { $0 = report.exit }
    }
    let inProcess = InProcessPipeline(pipeline: pipeline)
    print("helper pid \(helper), layers: \(sandbox.layers.map { "\($0)" } ?? "-")")
    for file in files {
      guard let data = FileManager.default.contents(atPath: file) else {
        CLI.printError("attachd bench-sandbox: cannot read \(file)")
        return 1
      }
      var on: [Sample] = []
      var off: [Sample] = []
      do {
        for round in 0..<(warmup + runs) {
          // Alternate which goes first, so neither always runs right after the other.
          for sandboxFirst in round.isMultiple(of: 2) ? [true, false] : [false, true] {
            if sandboxFirst {
              lastExit.withLock { $0 = nil }
              var sample = try measure(data, with: sandboxed, helper: helper)
              if let exit = lastExit.withLock({ $0 }) {
                sample.childCPU = Double(exit.cpuMicroseconds) / 1e6
                sample.fork = Double(exit.forkNanoseconds) / 1e9
              }
              if round >= warmup { on.append(sample) }
            } else {
              let sample = try measure(data, with: inProcess, helper: helper)
              if round >= warmup { off.append(sample) }
            }
          }
        }
      } catch {
        CLI.printError("attachd bench-sandbox: \(file): \(error.code): \(error.reason)")
        return 1
      }
      printResult(file: file, on: on, off: off, helper: helper)
    }
    return 0
  }

  /// One image through `imaging`: this process's CPU and the helper's (with its reaped children).
  static func measure(_ data: Data, with imaging: any ImageProcessing, helper: Int32) throws(PipelineError)
    -> Sample
  {
    let cpu0 = selfCPU() + helperCPU(helper)
    let faults0 = selfFaults() + helperFaults(helper)
    let wall0 = ContinuousClock.now
    let result = data.withUnsafeBytes { bytes in
      Result { () throws(PipelineError) in try imaging.process(bytes, profiles: [], cancellation: nil) }
    }
    _ = try result.get()
    let wall = ContinuousClock.now - wall0
    let cpu = selfCPU() + helperCPU(helper) - cpu0
    let faults = selfFaults() + helperFaults(helper) - faults0
    return Sample(
      cpu: cpu, wall: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
      faults: faults)
  }

  static func selfCPU() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
  }

  static func selfFaults() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_minflt)
  }

  static func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }

  /// utime + stime + cutime + cstime of the helper and its descendants, seconds. The process
  /// `Sandbox` spawned forks the init of the helper's PID namespace, which runs the loop and
  /// reaps the decode children: their CPU is in that process's cutime + cstime. (Clock ticks:
  /// 10 ms steps, which is why the mean of many runs is printed, and the child's own CPU from
  /// `wait4`, in µs, beside it.)
  static func helperCPU(_ pid: Int32) -> Double {
    // After the name: state is field 3 of stat(5); utime, stime, cutime, cstime are 14–17.
    helperStat(pid, fields: 11...14) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// minflt + cminflt (fields 10 and 11 of stat(5)) of the helper and its descendants.
  static func helperFaults(_ pid: Int32) -> Double { helperStat(pid, fields: 7...8) }

  /// The sum of `fields` (0 = stat(5)'s field 3, the state) over the helper's processes.
  static func helperStat(_ pid: Int32, fields wanted: ClosedRange<Int>) -> Double {
    var sum = 0.0
    for process in tree(pid) {
      guard let text = procFile("/proc/\(process)/stat"), let end = text.lastIndex(of: ")") else { continue }
      let fields = text[text.index(after: end)...].split(separator: " ")
      sum += wanted.compactMap { fields.indices.contains($0) ? Double(fields[$0]) : nil }.reduce(0, +)
    }
    return sum
  }

  /// `pid` and its descendants (`/proc/PID/task/PID/children`; the helper has one thread).
  static func tree(_ pid: Int32) -> [Int32] {
    let children = procFile("/proc/\(pid)/task/\(pid)/children") ?? ""
    return [pid]
      + children.split(separator: " ").compactMap {
        Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
      }
      .flatMap(tree)
  }

  /// The resident KiB (`VmRSS` or `VmHWM`) of the helper's processes, summed (the spawned one
  /// and the loop it forked; pages they share count twice, so this is an upper bound).
  static func helperKiB(_ pid: Int32, _ name: String) -> Int {
    tree(pid).map { statusKiB($0, name) }.reduce(0, +)
  }

  /// A /proc file's text (its size is 0 to stat: read until the end).
  static func procFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let got = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      guard got > 0 else { break }
      bytes += chunk[0..<got]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  static func statusKiB(_ pid: Int32, _ name: String) -> Int {
    guard let text = procFile("/proc/\(pid)/status") else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
      return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
    }
    return 0
  }

  static func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count.isMultiple(of: 2)
      ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
  }

  /// One line of figures and one of noise, in the form Scripts/bench-pipeline reads
  /// (`SANDBOX key=value …`).
  static func printResult(file: String, on: [Sample], off: [Sample], helper: Int32) {
    let cpuOn = median(on.map(\.cpu))
    let cpuOff = median(off.map(\.cpu))
    let wallOn = median(on.map(\.wall))
    let wallOff = median(off.map(\.wall))
    // The sum over all runs is what 10 ms ticks cannot blur.
    let totalOn = on.map(\.cpu).reduce(0, +) / Double(on.count)
    let totalOff = off.map(\.cpu).reduce(0, +) / Double(off.count)
    func ms(_ seconds: Double) -> String { String(format: "%.1f", seconds * 1000) }
    func spread(_ samples: [Double]) -> String {
      let sorted = samples.sorted()
      return "\(ms(sorted.first ?? 0))–\(ms(sorted.last ?? 0))"
    }
    print(
      "SANDBOX file=\((file as NSString).lastPathComponent) runs=\(on.count)"
        + " cpu_on_ms=\(ms(cpuOn)) cpu_off_ms=\(ms(cpuOff))"
        + " cpu_mean_on_ms=\(ms(totalOn)) cpu_mean_off_ms=\(ms(totalOff))"
        + " cpu_added_pct=\(String(format: "%.1f", (totalOn / totalOff - 1) * 100))"
        + " wall_on_ms=\(ms(wallOn)) wall_off_ms=\(ms(wallOff))"
        + " wall_added_ms=\(ms(wallOn - wallOff))"
        + " faults_on=\(Int(median(on.map(\.faults)))) faults_off=\(Int(median(off.map(\.faults))))"
        + " child_cpu_ms=\(ms(median(on.map(\.childCPU)))) fork_ms=\(String(format: "%.2f", median(on.map(\.fork) ) * 1000))"
        + " helper_rss_kib=\(helperKiB(helper, "VmRSS")) helper_hwm_kib=\(helperKiB(helper, "VmHWM"))"
        + " cpu_range_on_ms=\(spread(on.map(\.cpu))) cpu_range_off_ms=\(spread(off.map(\.cpu)))"
        + " wall_range_on_ms=\(spread(on.map(\.wall))) wall_range_off_ms=\(spread(off.map(\.wall)))")
  }
}
