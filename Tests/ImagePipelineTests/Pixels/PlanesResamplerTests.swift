import Foundation
import ImageCodecs
import Testing

@testable import ImagePipeline

@Suite struct PlanesResamplerTests {
  /// 4:2:0 noise planes of `width` × `height` (chroma rounded up on odd sides).
  static func planes(width: Int, height: Int, seed: UInt32) -> YCbCrPlanes {
    let chroma = ((width + 1) / 2, (height + 1) / 2)
    return YCbCrPlanes(
      luma: PixelFixtures.noise(width: width, height: height, layout: .gray, seed: seed),
      cb: PixelFixtures.noise(width: chroma.0, height: chroma.1, layout: .gray, seed: seed + 1),
      cr: PixelFixtures.noise(width: chroma.0, height: chroma.1, layout: .gray, seed: seed + 2),
      subsampling: (2, 2))
  }

  /// Rows of `planes` from luma row `first` (even), `count` luma rows.
  static func strip(_ planes: YCbCrPlanes, _ first: Int, _ count: Int) -> YCbCrPlanes {
    let chromaFirst = first / 2
    let chromaCount = min(planes.cb.height - chromaFirst, (count + 1) / 2)
    return YCbCrPlanes(
      luma: StripResamplerTests.rows(planes.luma, first, count),
      cb: StripResamplerTests.rows(planes.cb, chromaFirst, chromaCount),
      cr: StripResamplerTests.rows(planes.cr, chromaFirst, chromaCount), subsampling: planes.subsampling)
  }

  @Test(arguments: [(1001, 751, 333, 250), (640, 480, 300, 225), (35, 19, 17, 9)])
  func planesFedInTileRowsComeOutAsTheWholePlanesDo(size: (Int, Int, Int, Int)) throws {
    let (w, h, dw, dh) = size
    let source = Self.planes(width: w, height: h, seed: 4)
    let whole = try PlanesResampler.resize(source, width: dw, height: dh)
    for tileRow in [2, 16, 64, 512] {
      let resampler = PlanesResampler(
        lumaSize: (w, h), chromaSize: (source.cb.width, source.cb.height), subsampling: (2, 2),
        siting: .centred, width: dw, height: dh)
      for first in stride(from: 0, to: h, by: tileRow) {
        resampler.consume(Self.strip(source, first, min(tileRow, h - first)), at: first)
      }
      let result = try resampler.finish(matrix: .bt601, range: .full)
      #expect(
        StripResamplerTests.differences(result.luma.bytes, whole.luma.bytes) == 0, "luma, \(size) \(tileRow)")
      #expect(StripResamplerTests.differences(result.cb.bytes, whole.cb.bytes) == 0, "cb, \(size) \(tileRow)")
      #expect(StripResamplerTests.differences(result.cr.bytes, whole.cr.bytes) == 0, "cr, \(size) \(tileRow)")
      #expect((result.cb.width, result.cb.height) == YCbCrPlanes.chromaSize(width: dw, height: dh))
    }
  }

  /// Planes of a linear ramp along one axis: luma and chroma each sampled at their own sample
  /// centres, chroma sited as `siting` says. After cropping and resampling, the output chroma
  /// (centred) must read the ramp where the output luma does.
  @Test(arguments: [
    ChromaSiting.centred, ChromaSiting(h273ChromaLocation: 0)!, ChromaSiting(h273ChromaLocation: 2)!,
  ])
  func chromaStaysRegisteredWithTheLumaThroughOddCropsAndAnySiting(siting: ChromaSiting) throws {
    for vertical in [false, true] {
      let (width, height) = (48, 48)
      // 4 levels per luma pixel: a chroma shift of half a luma pixel would be 2 levels off.
      func ramp(_ x: Double) -> Double { 20 + 4 * x }
      func luma(_ x: Int, _ y: Int) -> UInt8 { UInt8(ramp(Double(vertical ? y : x) + 0.5).rounded()) }
      func chroma(_ j: Int, _ k: Int) -> UInt8 {
        let (index, position) = vertical ? (k, siting.vertical) : (j, siting.horizontal)
        let centre = position == .centred ? Double(2 * index + 1) : Double(2 * index) + 0.5
        return UInt8(ramp(centre).rounded())
      }
      let lumaBytes = (0..<height).flatMap { y in (0..<width).map { x in luma(x, y) } }
      let chromaBytes = (0..<(height / 2)).flatMap { k in (0..<(width / 2)).map { j in chroma(j, k) } }
      let planes = YCbCrPlanes(
        luma: PixelBuffer(width: width, height: height, layout: .gray, bytes: lumaBytes),
        cb: PixelBuffer(width: width / 2, height: height / 2, layout: .gray, bytes: chromaBytes),
        cr: PixelBuffer(width: width / 2, height: height / 2, layout: .gray, bytes: chromaBytes),
        subsampling: (2, 2), siting: siting)
      let crop = PlanesResampler.Crop(x: 3, y: 5, width: 40, height: 40)
      let out = try PlanesResampler.resize(planes, crop: crop, width: 40, height: 40)
      #expect(out.siting == .centred && (out.cb.width, out.cb.height) == (20, 20))
      let origin = Double(vertical ? crop.y : crop.x)
      var worst = 0.0
      // Away from the edges, where dropped taps bend the ramp.
      for k in 3..<17 {
        for j in 3..<17 {
          let index = vertical ? k : j
          let expected = ramp(origin + Double(2 * index + 1))
          worst = max(worst, abs(Double(out.cb.bytes[k * out.cb.rowBytes + j]) - expected))
        }
      }
      #expect(worst <= 0.75, "\(siting) \(vertical ? "vertical" : "horizontal"): \(worst) levels")
      // The luma itself was only cropped.
      #expect(out.luma.bytes[0] == luma(crop.x, crop.y))
    }
  }

  /// A tile decoder's loop: strips come from a closure, the checkpoint is checked before each.
  static func tileRows(
    of planes: YCbCrPlanes, into resampler: PlanesResampler, checkpoint: Checkpoint,
    produced: inout Int, onStrip: (Int) -> Void = { _ in }
  ) throws(PipelineError) {
    var top = 0
    var count = 0
    defer { produced = count }
    try resampler.consume(checkpoint: checkpoint) { () -> PlanesResampler.Strip? in
      guard top < planes.height else { return nil }
      count += 1
      onStrip(count)
      defer { top += 64 }
      return PlanesResampler.Strip(planes, origin: 0, rows: top..<min(planes.height, top + 64))
    }
  }

  @Test func aCancelledTileLoopStopsBeforeItsNextStrip() throws {
    let planes = Self.planes(width: 256, height: 1024, seed: 8)
    let resampler = PlanesResampler(
      lumaSize: (256, 1024), chromaSize: (128, 512), subsampling: (2, 2), siting: .centred, width: 64,
      height: 256)
    let cancellation = PipelineCancellation()
    var produced = 0
    // The client hangs up while the third strip is being decoded.
    #expect(throws: PipelineError.cancelled()) {
      try Self.tileRows(
        of: planes, into: resampler, checkpoint: Checkpoint(cancellation: cancellation, deadline: nil),
        produced: &produced, onStrip: { if $0 == 3 { cancellation.cancel() } })
    }
    #expect(produced == 3 && resampler.luma.nextRow == 192 && !resampler.luma.isComplete)
  }

  @Test func aTileLoopPastItsDeadlineStopsWithDeadlineExceeded() throws {
    let planes = Self.planes(width: 256, height: 1024, seed: 8)
    let resampler = PlanesResampler(
      lumaSize: (256, 1024), chromaSize: (128, 512), subsampling: (2, 2), siting: .centred, width: 64,
      height: 256)
    var produced = 0
    let deadline = ContinuousClock.now + .milliseconds(60)
    // Each strip takes 25 ms to "decode": the deadline passes during the third.
    #expect(throws: PipelineError.deadlineExceeded()) {
      try Self.tileRows(
        of: planes, into: resampler, checkpoint: Checkpoint(cancellation: nil, deadline: deadline),
        produced: &produced, onStrip: { _ in Thread.sleep(forTimeInterval: 0.025) })
    }
    #expect(produced >= 1 && produced < 16, "\(produced) strips")
  }

  @Test func aResizeWithAnOverdueCheckpointStopsAtItsFirstBand() {
    let planes = Self.planes(width: 100, height: 100, seed: 1)
    let overdue = Checkpoint(cancellation: nil, deadline: .now - .seconds(1))
    #expect(throws: PipelineError.deadlineExceeded()) {
      try PlanesResampler.resize(planes, width: 50, height: 50, checkpoint: overdue)
    }
  }
}

extension PlanesResamplerTests {
  /// Planes written upright as they are resampled are byte for byte the planes resampled in
  /// stored orientation and then turned by `Orienter`, for every orientation, with odd sizes
  /// and a short last group of rows.
  @Test(arguments: Orientation.allCases)
  func planesWrittenUprightMatchPlanesTurnedAfterwards(orientation: Orientation) throws {
    for (w, h, dw, dh) in [(1001, 751, 333, 250), (64, 48, 37, 21), (35, 19, 17, 9)] {
      let source = Self.planes(width: w, height: h, seed: 9)
      let stored = try PlanesResampler.resize(source, width: dw, height: dh)
      let resampler = PlanesResampler(
        lumaSize: (w, h), chromaSize: (source.cb.width, source.cb.height), subsampling: (2, 2),
        siting: .centred, width: dw, height: dh, orientation: orientation)
      for first in stride(from: 0, to: h, by: 64) {
        resampler.consume(Self.strip(source, first, min(64, h - first)), at: first)
      }
      let upright = try resampler.finish(matrix: .bt601, range: .full)
      for (name, turned, expected) in [
        ("luma", upright.luma, stored.luma), ("cb", upright.cb, stored.cb), ("cr", upright.cr, stored.cr),
      ] {
        let reference = Orienter.apply(orientation, to: expected)
        #expect((turned.width, turned.height) == (reference.width, reference.height), "\(name) \(w)x\(h)")
        #expect(StripResamplerTests.differences(turned.bytes, reference.bytes) == 0, "\(name) \(w)x\(h)")
      }
      let size = orientation.displaySize(width: dw, height: dh)
      #expect((upright.width, upright.height) == (size.width, size.height))
      #expect(
        (upright.cb.width, upright.cb.height)
          == YCbCrPlanes.chromaSize(width: size.width, height: size.height))
    }
  }
}
