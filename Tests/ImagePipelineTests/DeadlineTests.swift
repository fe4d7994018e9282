import Foundation
import ImageCodecs
import PipelineCLI
import Testing

@testable import ImagePipeline

/// A run stops between steps (and decoders between tiles or strips) once its caller cancels or
/// its deadline passes, gives its memory reservation back and produces nothing.
@Suite(.enabled(if: corpusPresent, "skipped: corpus not present"), .timeLimit(.minutes(2)))
struct DeadlineTests {
  /// The iPhone XS photo: its 48 tiles take well over a tenth of a second to decode.
  static let heic = "heic-iphonexs-irot-exif6-gps.heic"
  /// The 200 MP photo: 768 tiles, over a second of decoding.
  static let largeHEIC = "heic-samsung-200mp-irot.heic"

  static func pipeline(deadline: Duration = .seconds(30)) throws -> (Pipeline, MemoryBudget) {
    var configuration = Pipeline.Configuration()
    configuration.deadline = deadline
    configuration.memoryBudget = MemoryBudget(capacity: 1 << 30)
    return (try Pipeline(configuration: configuration), configuration.memoryBudget)
  }

  @Test func aDecodeThatPassesItsDeadlineStopsAndReportsDeadlineExceeded() throws {
    let input = try corpusBytes(Self.heic)
    let (pipeline, budget) = try Self.pipeline(deadline: .milliseconds(100))
    let clock = ContinuousClock()
    let started = clock.now
    #expect(throws: PipelineError.deadlineExceeded()) { try pipeline.process(input) }
    let stopped = clock.now - started
    // The run stops at the first check after the deadline (before the next tile), which is
    // why it is past the deadline at all; the memory it reserved is free again.
    #expect(stopped >= .milliseconds(100))
    #expect(budget.inUse == 0)
    // The same input with time to spare goes through.
    let (relaxed, _) = try Self.pipeline()
    #expect(try relaxed.process(input).width == 1536)
  }

  @Test func aRunCancelledBeforeItStartsDecodesNothing() throws {
    let input = try corpusBytes(Self.heic)
    let (pipeline, budget) = try Self.pipeline()
    let cancellation = PipelineCancellation()
    cancellation.cancel()
    let clock = ContinuousClock()
    let started = clock.now
    #expect(throws: PipelineError.cancelled()) { try pipeline.process(input, cancellation: cancellation) }
    // Stopped at the first check, long before a tile could have been decoded.
    #expect(clock.now - started < .milliseconds(500))
    #expect(budget.inUse == 0)
  }

  @Test func aRunCancelledWhileDecodingStopsAtItsNextCheck() throws {
    let input = try corpusBytes(Self.heic)
    let (pipeline, budget) = try Self.pipeline()
    let cancellation = PipelineCancellation()
    // The client hangs up 20 ms in, in the middle of the decode.
    Thread.detachNewThread {
      Thread.sleep(forTimeInterval: 0.02)
      cancellation.cancel()
    }
    #expect(throws: PipelineError.cancelled()) { try pipeline.process(input, cancellation: cancellation) }
    #expect(budget.inUse == 0)
  }

  /// The HEVC path checks before every tile: a run cancelled a little way into the 200 MP
  /// photo's 768 tiles stops long before the whole decode would have finished.
  @Test func theHEVCPathStopsBetweenTiles() throws {
    let input = try corpusBytes(Self.largeHEIC)
    let (pipeline, budget) = try Self.pipeline()
    let clock = ContinuousClock()
    var started = clock.now
    _ = try pipeline.process(input)
    let whole = clock.now - started
    let cancellation = PipelineCancellation()
    Thread.detachNewThread {
      Thread.sleep(forTimeInterval: 0.05)
      cancellation.cancel()
    }
    started = clock.now
    #expect(throws: PipelineError.cancelled()) { try pipeline.process(input, cancellation: cancellation) }
    let stopped = clock.now - started
    #expect(stopped < whole / 2, "stopped after \(stopped); the whole run took \(whole)")
    #expect(budget.inUse == 0)
  }

  @Test func theProcessCommandHonoursDeadline() throws {
    let dir = try CLITests.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("out.jpg").path
    var errors: [String] = []
    let status = ProcessCLI.run(
      [CLITests.corpusPath(Self.heic), out, "--deadline", "0.05"], stderr: { errors.append($0) })
    // Temporary failure (sysexits 75), one line with the code, no file.
    #expect(status == 75)
    #expect(errors.count == 1 && errors[0].hasPrefix("attachd: deadline_exceeded: "))
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    #expect(ProcessCLI.run([CLITests.corpusPath(Self.heic), out, "--deadline", "60"], stderr: { _ in }) == 0)
    for bad in ["0", "-1", "soon", "nan"] {
      #expect(ProcessCLI.run(["a", "b", "--deadline", bad], stderr: { _ in }) == 64, "\(bad)")
    }
  }

  @Test func aDeadlineMustBePositive() {
    var configuration = Pipeline.Configuration()
    configuration.deadline = .zero
    #expect(throws: Pipeline.ConfigurationError.self) { try Pipeline(configuration: configuration) }
  }
}
