import Foundation
import TestSupport

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// The built `attachd serve` on a free 127.0.0.1 port with a data directory of its own; stopped
/// by its pid when the value goes.
final class LiveAttachd: @unchecked Sendable {
  static let key = "0123456789abcdef0123"
  static let binary = BuiltExecutable.attachd
  let process: Process
  let port: Int
  let directory: String
  var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

  init(environment extra: [String: String] = [:]) throws {
    guard let binary = Self.binary else { throw StartFailure(description: "attachd is not built") }
    directory = try ScratchSpace.directory("attachdkit")
    let log = directory + "/stderr.log"
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["serve", "--port", "0", "--data-dir", directory + "/data"]
    process.environment = ["ATTACHD_API_KEYS": "acme:\(Self.key)", "ATTACHD_ACCESS_LOG": "off"].merging(extra)
    {
      $1
    }
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    try process.run()
    var found: Int?
    let deadline = Date().addingTimeInterval(30)
    while found == nil, Date() < deadline, process.isRunning {
      let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
      if let range = text.range(of: #""address":"127.0.0.1:"#) {
        found = Int(text[range.upperBound...].prefix { $0.isNumber })
      }
      usleep(20_000)
    }
    guard let found else {
      if process.isRunning { process.terminate() }
      throw StartFailure(
        description: "attachd did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }
    port = found
  }

  deinit {
    ChildProcess.stop(process.processIdentifier)
    try? FileManager.default.removeItem(atPath: directory)
  }

  /// Files under the data directory, with their sizes.
  func storedFiles() -> [String] {
    let root = directory + "/data"
    let names = FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? []
    return names.compactMap { name in
      let attributes = try? FileManager.default.attributesOfItem(atPath: root + "/" + name)
      guard attributes?[.type] as? FileAttributeType == .typeRegular else { return nil }
      return "\(name) \((attributes?[.size] as? NSNumber)?.intValue ?? 0)"
    }
  }

  /// `attachd_stored_objects` from `/metrics` (the index's count; read once per test, so the
  /// gauge's 5 s cache is fresh).
  func storedObjects() async throws -> Int? {
    try await metric("attachd_stored_objects ").map { Int($0) }
  }

  /// The value of the first `/metrics` line that starts with `prefix`.
  func metric(_ prefix: String) async throws -> Double? {
    try await metricValues(prefix).first
  }

  /// The sum of the `/metrics` lines that start with `prefix` (a counter over all its other labels).
  func metricTotal(_ prefix: String) async throws -> Double {
    try await metricValues(prefix).reduce(0, +)
  }

  /// `metricTotal(prefix)` once it reaches `target`, or what it is after `seconds`: a request is
  /// counted when it completes, which can be just after its answer reached the client.
  func metricTotal(_ prefix: String, reaching target: Double, within seconds: Double = 3) async throws
    -> Double
  {
    let deadline = Date().addingTimeInterval(seconds)
    var total = try await metricTotal(prefix)
    while total < target, Date() < deadline {
      try await Task.sleep(nanoseconds: 50_000_000)
      total = try await metricTotal(prefix)
    }
    return total
  }

  private func metricValues(_ prefix: String) async throws -> [Double] {
    let (data, _) = try await URLSession.shared.data(from: baseURL.appendingPathComponent("metrics"))
    return String(decoding: data, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix(prefix) }
      .compactMap { Double($0.split(separator: " ").last ?? "") }
  }
}

struct StartFailure: Error, CustomStringConvertible {
  let description: String
}

/// The resident set of this process, from /proc/self/status.
enum ResidentMemory {
  static func current() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
  }

  /// The highest resident set seen while `body` runs (sampled every 10 ms).
  static func peak<T: Sendable>(during body: () async throws -> T) async rethrows -> (T, Int) {
    let peak = PeakSampler()
    let sampler = Thread { peak.run() }
    sampler.start()
    defer { peak.stop() }
    let result = try await body()
    peak.stop()
    return (result, peak.value)
  }
}

final class PeakSampler: @unchecked Sendable {
  private let lock = NSLock()
  private var highest = ResidentMemory.current()
  private var stopped = false

  var value: Int { lock.withLock { highest } }
  func stop() { lock.withLock { stopped = true } }
  func run() {
    while !lock.withLock({ stopped }) {
      let now = ResidentMemory.current()
      lock.withLock { highest = max(highest, now) }
      usleep(10_000)
    }
  }
}
