import Foundation
import Testing

@testable import ImagePipeline

@Suite struct PipelineStepTests {
  @Test func stepsRunInTheDocumentedOrder() {
    #expect(
      Pipeline.standardPath.map(\.name) == [
        "sniff", "header", "reserve-memory", "decode", "flatten-alpha", "resize", "orient", "merge-planes",
        "colour", "renditions", "encode", "verify",
      ])
  }

  @Test func theLosslessRouteIsDecidedFromTheHeadersAlone() throws {
    func route(_ input: [UInt8], maxEdge: Int = 2048) throws -> Pipeline.Route {
      var configuration = Pipeline.Configuration()
      configuration.maxEdge = maxEdge
      var c = PipelineContext(input: input, configuration: configuration)
      for step in Pipeline.inspection { try step.run(&c) }
      #expect(c.pixels == nil && c.planes == nil && c.output == nil)
      return Pipeline.route(c)
    }
    let jpeg = try Fixtures.jpeg(Fixtures.quadrants(width: 32, height: 32), orientation: 6)
    #expect(try route(jpeg) == .lossless(.rot90))
    #expect(try route(jpeg, maxEdge: 16) == .standard)  // must be resized
    #expect(try route(Fixtures.png(Fixtures.quadrants(width: 32, height: 32))) == .standard)
  }

  @Test func sniffAndHeaderStepsDecideEverythingBeforeDecoding() throws {
    let input = Fixtures.png(Fixtures.quadrants(width: 300, height: 100), orientation: 6)
    var c = PipelineContext(input: input, configuration: Pipeline.Configuration())
    try SniffStep.run(&c)
    #expect(c.format == .png)
    try HeaderStep.run(&c)
    #expect(c.displaySize == (100, 300) && c.orientation.apply == .right)
    #expect(c.pixels == nil && c.output == nil)
  }

  @Test func resizeStepWorksInStoredOrientationAndOrientStepTurnsTheSmallImage() throws {
    var configuration = Pipeline.Configuration()
    configuration.maxEdge = 60
    let input = Fixtures.png(Fixtures.quadrants(width: 300, height: 100), orientation: 6)
    var c = PipelineContext(input: input, configuration: configuration)
    for step in Pipeline.standardPath.prefix(4) { try step.run(&c) }
    #expect(c.outputSize == (20, 60) && c.storedOutputSize == (60, 20))
    try ResizeStep.run(&c)
    #expect(c.pixels?.width == 60 && c.pixels?.height == 20)
    try OrientStep.run(&c)
    #expect(c.pixels?.width == 20 && c.pixels?.height == 60)
  }

  @Test func timingsCoverEveryStepThatRan() throws {
    let result = try Pipeline().process(Fixtures.png(Fixtures.quadrants(width: 40, height: 40)))
    #expect(result.timings.map(\.stage) == Pipeline.standardPath.map(\.name))
    let lossless = try Pipeline().process(
      try Fixtures.jpeg(Fixtures.quadrants(width: 32, height: 32), orientation: 1))
    #expect(
      lossless.losslessTransform
        && lossless.timings.map(\.stage) == ["sniff", "header", "lossless-jpeg", "verify"])
  }

  /// Per-stage timings of a few corpus photos (run by hand: ATTACHD_BENCH=1).
  @Test(.enabled(if: ProcessInfo.processInfo.environment["ATTACHD_BENCH"] == "1" && corpusPresent))
  func printStageTimings() throws {
    let pipeline = try Pipeline()
    for file in ["jpeg-iphone6-gps.jpg", "heic-iphonexs-irot-exif6-gps.heic", "heic-samsung-200mp-irot.heic"]
    {
      let result = try pipeline.process(try corpusBytes(file))
      let stages = result.timings.map { "\($0.stage)=\(Int($0.duration / .milliseconds(1)))ms" }
      print("bench \(file): \(stages.joined(separator: " "))")
    }
  }
}
