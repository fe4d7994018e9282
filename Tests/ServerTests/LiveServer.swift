import AttachdTesting
import Dispatch
import Foundation
import Glibc
import HTTP
import Server
import Synchronization

/// A server on 127.0.0.1:0 running `run()` on its own thread, stopped (bounded) by `stop()`.
final class LiveServer: Sendable {
  let server: Server
  private let finished = DispatchSemaphore(value: 0)
  private let returned = Atomic<Bool>(false)

  init(_ configure: (inout Server.Configuration) -> Void = { _ in }, handler: some HTTPHandler) throws {
    var configuration = Server.Configuration()
    configuration.port = 0
    configuration.loopCount = 2
    configuration.workerThreads = 2
    configuration.handleSignals = false
    configure(&configuration)
    server = try Server(configuration: configuration, handler: handler)
    let thread = Thread { [self] in
      try? server.run()
      returned.store(true, ordering: .releasing)
      finished.signal()
    }
    thread.start()
  }

  var port: Int { server.localPort }
  var hasReturned: Bool { returned.load(ordering: .acquiring) }

  /// Shuts down and waits up to `timeout` for `run()` to return; true when it did.
  @discardableResult
  func stop(timeout: Double = 10) -> Bool {
    server.shutdown()
    return waitForReturn(timeout: timeout)
  }

  func waitForReturn(timeout: Double) -> Bool {
    if hasReturned { return true }
    guard finished.wait(timeout: .now() + timeout) == .success else { return false }
    finished.signal()
    return true
  }
}

/// Thread-safe event list the test handlers write and the tests read.
final class Recorder: Sendable {
  private let events = Mutex<[String]>([])

  func record(_ event: String) { events.withLock { $0.append(event) } }
  var all: [String] { events.withLock { $0 } }

  /// Polls (bounded) until `predicate` holds; returns whether it did.
  func wait(timeout: Double = 5, until predicate: ([String]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if predicate(all) { return true }
      usleep(10_000)
    }
    return predicate(all)
  }
}

/// Runs a command to completion (bounded by `timeout`), returning status and stdout.
func runProcess(_ path: String, _ arguments: [String], stdin: Data? = nil, timeout: Double = 20) throws -> (
  status: Int32, output: String
) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  let out = Pipe()
  process.standardOutput = out
  process.standardError = FileHandle.standardError
  let input = Pipe()
  if stdin != nil { process.standardInput = input }
  try process.run()
  if let stdin {
    input.fileHandleForWriting.write(stdin)
    try input.fileHandleForWriting.close()
  }
  let done = DispatchSemaphore(value: 0)
  let collected = Mutex(Data())
  DispatchQueue.global().async {
    let data = out.fileHandleForReading.readDataToEndOfFile()
    collected.withLock { $0 = data }
    done.signal()
  }
  if done.wait(timeout: .now() + timeout) == .timedOut {
    process.terminate()
    throw TestClientError("\(path) timed out")
  }
  process.waitUntilExit()
  return (process.terminationStatus, String(decoding: collected.withLock { $0 }, as: UTF8.self))
}
