import Foundation
import Synchronization
import Testing

@testable import ImagePipeline

@Suite struct LimitsTests {
  static func pipeline(_ change: (inout Pipeline.Configuration) -> Void) throws -> Pipeline {
    var configuration = Pipeline.Configuration()
    change(&configuration)
    return try Pipeline(configuration: configuration)
  }

  static func code(_ pipeline: Pipeline, _ input: [UInt8]) -> String? {
    do {
      _ = try pipeline.process(input)
      return nil
    } catch {
      return error.code
    }
  }

  @Test func inputBytesAreCheckedFirst() throws {
    let p = try Self.pipeline { $0.limits.maxInputBytes = 10 }
    // Not even an image: the byte limit answers before sniffing.
    #expect(Self.code(p, [UInt8](repeating: 0x41, count: 11)) == "too_large_bytes")
    #expect(Self.code(p, []) == "empty")
  }

  @Test func pixelAndDimensionLimitsComeFromTheHeader() throws {
    let image = Fixtures.quadrants(width: 40, height: 30)
    let png = Fixtures.png(image)
    #expect(Self.code(try Self.pipeline { $0.limits.maxPixels = 1199 }, png) == "pixel_limit")
    #expect(Self.code(try Self.pipeline { $0.limits.maxDimension = 39 }, png) == "dimension_limit")
    #expect(Self.code(try Self.pipeline { $0.limits.maxPixels = 1200 }, png) == nil)
  }

  @Test func headerLyingAboutPixelsIsRejectedBeforeDecoding() throws {
    // IHDR claims 30000 x 30000 (900 MP) over a tiny IDAT: refused from the header alone.
    var png = Fixtures.png(Fixtures.quadrants(width: 4, height: 4))
    let ihdr = Fixtures.chunk("IHDR", Fixtures.be32(30_000) + Fixtures.be32(30_000) + [8, 2, 0, 0, 0])
    png.replaceSubrange(8..<(8 + 25), with: ihdr)
    #expect(Self.code(try Pipeline(), png) == "pixel_limit")
  }

  @Test func pngTextChunksAreCappedWithoutInflating() throws {
    let text = [UInt8](repeating: 0x61, count: 5000)
    let png = Fixtures.png(
      Fixtures.quadrants(width: 8, height: 8), extraChunks: [("tEXt", Array("k\0".utf8) + text)])
    #expect(Self.code(try Self.pipeline { $0.limits.maxPNGTextBytes = 4096 }, png) == "metadata_too_large")
    #expect(Self.code(try Pipeline(), png) == nil)
  }

  @Test(.enabled(if: corpusPresent, "skipped: corpus not present"))
  func heifItemAndTileCountsAreLimited() throws {
    let input = try corpusBytes("heic-iphonexs-irot-exif6-gps.heic")
    #expect(Self.code(try Self.pipeline { $0.limits.maxHEIFTiles = 47 }, input) == "too_many_items")
    #expect(Self.code(try Self.pipeline { $0.limits.maxHEIFItems = 10 }, input) == "too_many_items")
  }

  @Test func configurationIsValidated() {
    var c = Pipeline.Configuration()
    c.quality = 0
    #expect(throws: Pipeline.ConfigurationError.self) { try Pipeline(configuration: c) }
    c = Pipeline.Configuration()
    c.limits.maxPixels = 0
    #expect(throws: Pipeline.ConfigurationError.self) { try Pipeline(configuration: c) }
  }

  @Test func memoryBudgetRefusesWhatCanNeverFitAndTimesOut() throws {
    let budget = MemoryBudget(capacity: 1000, waitTimeout: .milliseconds(50))
    #expect(throws: PipelineError.self) { try budget.reserve(1001) }
    let held = try budget.reserve(800)
    #expect(budget.inUse == 800)
    let started = ContinuousClock.now
    #expect { try budget.reserve(300) } throws: { ($0 as? PipelineError)?.code == "memory_budget" }
    #expect(ContinuousClock.now - started >= .milliseconds(40))
    held.release()
    held.release()
    #expect(budget.inUse == 0)
  }

  @Test func memoryBudgetWaiterProceedsWhenAnotherReleases() throws {
    let budget = MemoryBudget(capacity: 1000, waitTimeout: .seconds(10))
    let held = try budget.reserve(900)
    // A plain thread, not a Task: the reservation blocks, which must not tie up the test's
    // cooperative threads.
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Int?>(nil)
    Thread.detachNewThread {
      let bytes = (try? budget.reserve(500))?.bytes
      result.withLock { $0 = bytes }
      done.signal()
    }
    Thread.sleep(forTimeInterval: 0.05)
    #expect(result.withLock { $0 } == nil)
    held.release()
    #expect(done.wait(timeout: .now() + 10) == .success)
    #expect(result.withLock { $0 } == 500)
    #expect(budget.inUse == 0)
  }

  @Test func pipelineReleasesItsReservation() throws {
    let budget = MemoryBudget(capacity: 64 << 20)
    let p = try Self.pipeline { $0.memoryBudget = budget }
    _ = try p.process(Fixtures.png(Fixtures.quadrants(width: 50, height: 50)))
    #expect(budget.inUse == 0)
    let tiny = try Self.pipeline { $0.memoryBudget = MemoryBudget(capacity: 10, waitTimeout: .zero) }
    #expect(Self.code(tiny, Fixtures.png(Fixtures.quadrants(width: 50, height: 50))) == "memory_budget")
  }

  @Test func sameInputAndSettingsGiveIdenticalBytes() throws {
    let png = Fixtures.png(Fixtures.quadrants(width: 300, height: 200))
    let p = try Self.pipeline { $0.maxEdge = 120 }
    #expect(try p.process(png).jpeg == p.process(png).jpeg)
  }
}
