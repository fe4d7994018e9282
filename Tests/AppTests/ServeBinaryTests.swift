import Foundation
import TestSupport
import Testing

@testable import App

/// The built `attachd` executable, run as a user would: serve, answer curl, stop on SIGTERM.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ServeBinaryTests {
  /// `attachd` beside the test bundle (`swift build --build-tests` builds both).
  static let binary = BuiltExecutable.attachd

  struct Started {
    var process: Process
    var port: Int
    var stderrPath: String
  }

  /// Starts `attachd serve --port 0 …` and learns the port from its "listening" log line.
  func start(_ arguments: [String], environment: [String: String] = [:]) throws -> Started {
    let binary = try #require(Self.binary)
    let dir = try LiveTesting.temporaryDirectory()
    let stderrPath = dir + "/stderr.log"
    _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = ["serve"] + arguments
    process.environment = environment
    process.currentDirectoryURL = URL(fileURLWithPath: dir)
    process.standardOutput = FileHandle.nullDevice
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
    try process.run()
    var port: Int?
    // Generous: a debug binary on a loaded 2-core machine can take a while to start.
    _ = LiveTesting.waitUntil(seconds: 30) {
      let lines = (try? LiveTesting.jsonLines(stderrPath)) ?? []
      if let address = lines.first(where: { $0["message"] as? String == "listening" })?["address"] as? String
      {
        port = Int(address.split(separator: ":").last ?? "")
      }
      return port != nil || !process.isRunning
    }
    guard let port else {
      if process.isRunning { process.terminate() }
      let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
      Issue.record("attachd did not start: \(log)")
      throw CancellationError()
    }
    return Started(process: process, port: port, stderrPath: stderrPath)
  }

  @Test(.enabled(if: binary != nil, "attachd binary not built"))
  func serveAnswersHealthzAndExitsZeroOnSIGTERM()
    throws
  {
    let dataDir = try LiveTesting.temporaryDirectory() + "/data"
    let started = try start(
      ["--port", "0", "--data-dir", dataDir],
      environment: ["ATTACHD_API_KEYS": "acme:0123456789abcdef", "ATTACHD_ACCESS_LOG": "off"])
    defer { if started.process.isRunning { started.process.terminate() } }
    #expect(FileManager.default.fileExists(atPath: dataDir))

    let health = try LiveTesting.curl("http://127.0.0.1:\(started.port)/healthz")
    #expect(health.status == 200)
    #expect(try LiveTesting.curl("http://127.0.0.1:\(started.port)/readyz").status == 200)

    kill(started.process.processIdentifier, SIGTERM)
    let exited = LiveTesting.waitUntil(seconds: 15) { !started.process.isRunning }
    #expect(exited, "attachd still running 15 s after SIGTERM")
    if !exited { kill(started.process.processIdentifier, SIGKILL) }
    started.process.waitUntilExit()
    #expect(started.process.terminationReason == .exit)
    #expect(started.process.terminationStatus == 0)
  }

  /// A stack brought up with an empty `.env` answers every upload 401: `serve` says why at start,
  /// and says nothing when a key is set.
  @Test(.enabled(if: binary != nil, "attachd binary not built"))
  func serveWarnsAtStartWhenNoKeyIsConfigured() throws {
    func warnings(_ environment: [String: String]) throws -> [String] {
      let dataDir = try LiveTesting.temporaryDirectory() + "/data"
      let started = try start(["--port", "0", "--data-dir", dataDir], environment: environment)
      defer {
        started.process.terminate()
        started.process.waitUntilExit()
      }
      var found: [String] = []
      _ = LiveTesting.waitUntil(seconds: 15) {
        let lines = (try? LiveTesting.jsonLines(started.stderrPath)) ?? []
        found = lines.filter { $0["message"] as? String == "no keys" }.compactMap { $0["detail"] as? String }
        // The warning, when there is one, is the line right after "listening".
        let listening = lines.firstIndex { $0["message"] as? String == "listening" } ?? lines.count
        return lines.count > listening + 1
      }
      return found
    }
    let keyless = try warnings(["ATTACHD_ACCESS_LOG": "off"])
    #expect(keyless.count == 1)
    #expect(keyless.first?.contains("ATTACHD_API_KEYS") == true)
    #expect(try warnings(["ATTACHD_API_KEYS": "acme:0123456789abcdef", "ATTACHD_ACCESS_LOG": "off"]).isEmpty)
  }

  @Test(.enabled(if: binary != nil, "attachd binary not built")) func aBadSettingStopsServeWithExitStatus78()
    throws
  {
    let binary = try #require(Self.binary)
    let (status, message) = try Self.runToEnd(
      binary, ["serve", "--port", "0"], environment: ["ATTACHD_API_KEYS": "acme"])
    #expect(status == 78)
    #expect(message.contains("ATTACHD_API_KEYS: entry 1 is not tenant:key"))
  }

  @Test(
    .enabled(if: binary != nil, "attachd binary not built"),
    arguments: [["bogus"], ["--bogus"], ["serve", "--bogus"], []])
  func unknownCommandsAndFlagsExit64WithOneLineAndTheUsage(arguments: [String]) throws {
    let binary = try #require(Self.binary)
    let (status, message) = try Self.runToEnd(binary, arguments)
    #expect(status == 64)
    #expect(message.hasPrefix("attachd"))
    #expect(message.contains("usage: attachd"))
  }

  /// Runs the binary to its end; its exit status and what it wrote to standard error.
  static func runToEnd(
    _ binary: String, _ arguments: [String], environment: [String: String]? = nil
  ) throws -> (status: Int32, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let errors = Pipe()
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return (process.terminationStatus, message)
  }
}
