import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Sandbox

/// The sandbox with its real helper (the built `attachd`): jobs run in forked, locked-down
/// children; what they try that they may not kills them, and the server side sees each end.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SandboxTests {
  /// A sandbox on the built `attachd`, small limits so the limit probes end quickly.
  static func sandbox(memory: Int = 512 << 20, cpu: Int = 1, recycleAfter: Int = 10_000) throws -> Sandbox {
    var configuration = SandboxConfiguration()
    configuration.executable = try #require(BuiltExecutable.attachd, "attachd is not built")
    configuration.memoryLimit = memory
    configuration.cpuSeconds = cpu
    configuration.recycleAfter = recycleAfter
    let sandbox = Sandbox(configuration: configuration)
    #expect(sandbox.waitUntilReady(seconds: 10), "\(sandbox.lastFailure ?? "")")
    return sandbox
  }

  static func run(
    _ sandbox: Sandbox, _ job: String, input: [UInt8] = [], parameters: String = "",
    deadline: Duration = .seconds(20)
  ) throws -> SandboxRun {
    try input.withUnsafeBytes {
      try sandbox.run(
        job: job, input: $0, parameters: Array(parameters.utf8), outputCapacity: 1 << 20, deadline: deadline)
    }
  }

  @Test func aJobReadsItsSealedInputAndItsOutputComesBack() throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let input = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let run = try Self.run(sandbox, "probe.echo", input: input)
    #expect(run.outcome == .finished)
    #expect(run.output == input)
  }

  @Test(arguments: ["probe.open", "probe.connect", "probe.exec", "probe.environ"])
  func whatADecoderMustNeverDoKillsItsChild(probe: String) throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let parameters = probe == "probe.environ" ? String(getpid()) : ""
    let run = try Self.run(sandbox, probe, parameters: parameters)
    #expect(run.outcome == .violation, "\(run.outcome) \(String(decoding: run.output, as: UTF8.self))")
    #expect(run.exit.signal == SIGSYS)
  }

  /// glibc's malloc opens /proc/sys/vm/overcommit_memory when it first shrinks a thread's heap
  /// (Scripts/fuzz-sandbox found a HEIF that gets there): that one shape fails, opening nothing.
  @Test(arguments: ["/proc/sys/vm/overcommit_memory", "/etc/passwd"])
  func mallocsOvercommitProbeFailsWithoutKillingTheChild(path: String) throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let run = try Self.run(sandbox, "probe.open-like-malloc", parameters: path)
    #expect(run.outcome == .finished)
    #expect(String(decoding: run.output, as: UTF8.self) == "opened -1 errno \(EACCES)")
  }

  @Test(arguments: [SIGSEGV, SIGABRT, SIGBUS, SIGFPE])
  func aChildThatCrashesIsACrashAndTheNextJobRuns(signal: Int32) throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let run = try Self.run(sandbox, "probe.crash", parameters: String(signal))
    #expect(run.outcome == .crashed(signal: signal))
    #expect(try Self.run(sandbox, "probe.echo", input: [1, 2, 3]).output == [1, 2, 3])
  }

  @Test func memoryPastTheLimitIsRefused() throws {
    let sandbox = try Self.sandbox(memory: 1 << 30)
    defer { sandbox.stop() }
    let run = try Self.run(sandbox, "probe.allocate")
    #expect(run.outcome == .finished)
    let text = String(decoding: run.output, as: UTF8.self)
    let megabytes = Int(text.split(separator: " ")[1]) ?? .max
    // Some of the gigabyte is the child's libraries; the rest it may use, and not a byte more.
    #expect(megabytes > 0 && megabytes < 1024, "\(text)")
  }

  @Test func aChildSpinningPastItsCPUSecondsIsStoppedByTheKernel() throws {
    let sandbox = try Self.sandbox(cpu: 1)
    defer { sandbox.stop() }
    let run = try Self.run(sandbox, "probe.spin")
    #expect(run.outcome == .cpuLimit)
    #expect(run.exit.cpuMicroseconds >= 900_000)
  }

  @Test func aChildPastItsDeadlineIsKilled() throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let start = ContinuousClock.now
    let run = try Self.run(sandbox, "probe.sleep", parameters: "10000", deadline: .milliseconds(200))
    #expect(run.outcome == .stopped && run.deadlineExceeded)
    #expect(ContinuousClock.now - start < .seconds(3))
  }

  @Test func theHelperDropsRootAndEveryChildIsANewProcessOfItsUser() throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let layers = try #require(sandbox.layers)
    #expect(layers.uid != 0)
    if getuid() == 0 { #expect(layers.droppedRoot && layers.uid == 65534) }
    let probe = try Self.run(sandbox, "probe.identity")
    #expect(
      probe.outcome == .finished,
      "\(probe.outcome) \(String(decoding: probe.exit.diagnostics, as: UTF8.self))")
    let first = String(decoding: probe.output, as: UTF8.self)
    let second = String(decoding: try Self.run(sandbox, "probe.identity").output, as: UTF8.self)
    #expect(first.hasPrefix("uid \(layers.uid) pid "))
    #expect(first != second, "one child served two jobs")
  }

  @Test func aKilledHelperIsReplacedAndItsRequestsAreAnsweredUnavailable() throws {
    let sandbox = try Self.sandbox()
    defer { sandbox.stop() }
    let first = try #require(sandbox.helperPID)
    let answer = Mutex<Result<SandboxRun, SandboxError>?>(nil)
    let thread = Thread {
      let input = [UInt8](repeating: 0, count: 8)
      let result: Result<SandboxRun, SandboxError>
      do {
        result = .success(
          try input.withUnsafeBytes { bytes throws(SandboxError) in
            try sandbox.run(
              job: "probe.sleep", input: bytes, parameters: Array("5000".utf8), outputCapacity: 64,
              deadline: .seconds(20))
          })
      } catch {
        result = .failure(error as? SandboxError ?? .unavailable("\(error)"))
      }
      answer.withLock { $0 = result }
    }
    thread.start()
    usleep(300_000)
    kill(first, SIGKILL)
    let deadline = Date().addingTimeInterval(5)
    while answer.withLock({ $0 == nil }) && Date() < deadline { usleep(10_000) }
    guard case .failure(.unavailable)? = answer.withLock({ $0 }) else {
      Issue.record("the request on the dead helper got \(String(describing: answer.withLock { $0 }))")
      return
    }
    #expect(sandbox.waitUntilReady(seconds: 5))
    #expect(sandbox.helperPID != first)
    #expect(try Self.run(sandbox, "probe.echo", input: [9]).output == [9])
  }
}
