import Foundation
import ImageCodecs
import Testing

@testable import ImagePipeline

@Suite struct StripResamplerTests {
  /// Rows `first ..< first + count` of `image` as their own buffer (same row padding).
  static func rows(_ image: PixelBuffer, _ first: Int, _ count: Int) -> PixelBuffer {
    let bytes = Array(image.bytes[(first * image.rowBytes)..<((first + count) * image.rowBytes)])
    return PixelBuffer(
      width: image.width, height: count, layout: image.layout, rowBytes: image.rowBytes, bytes: bytes)
  }

  /// How many samples differ (the count, not the arrays, goes into a failure message).
  static func differences(_ a: [UInt8], _ b: [UInt8]) -> Int {
    a.count == b.count ? zip(a, b).count { $0 != $1 } : max(a.count, b.count)
  }

  /// Feeds `image` to `resampler` in strips of `strip` rows (the last one shorter).
  static func feed(_ image: PixelBuffer, to resampler: StripResampler, strip: Int) {
    for first in stride(from: 0, to: image.height, by: strip) {
      resampler.consume(rows(image, first, min(strip, image.height - first)), at: first)
    }
  }

  /// The part of `image` inside `x, y, width, height`, as a tight buffer.
  static func cropped(_ image: PixelBuffer, x: Int, y: Int, width: Int, height: Int) -> PixelBuffer {
    let channels = image.layout.channels
    var bytes: [UInt8] = []
    for row in y..<(y + height) {
      let start = row * image.rowBytes + x * channels
      bytes += image.bytes[start..<(start + width * channels)]
    }
    return PixelBuffer(width: width, height: height, layout: image.layout, bytes: bytes)
  }

  // (source width, height, destination width, height): plain Lanczos, box-shrunk on one or both
  // axes (3× and more), odd sizes, a 1-row destination.
  static let sizes: [(Int, Int, Int, Int)] = [
    (97, 61, 40, 25), (300, 211, 37, 70), (640, 480, 101, 75), (1000, 37, 9, 5), (33, 90, 33, 1),
  ]

  @Test(arguments: [PixelBuffer.Layout.gray, .rgb, .rgba], sizes.indices)
  func stripsOfAnyHeightGiveExactlyTheWholeImageResult(layout: PixelBuffer.Layout, index: Int) throws {
    let (w, h, dw, dh) = Self.sizes[index]
    let source = PixelFixtures.noise(width: w, height: h, layout: layout, seed: UInt32(index + 1), padding: 3)
    let whole = StripResampler(sourceWidth: w, sourceHeight: h, layout: layout, width: dw, height: dh)
    whole.consume(source, at: 0)
    let expected = try whole.finish().bytes
    if layout != .rgba {
      // What every whole-image resize runs.
      #expect(Resampler.resize(source, width: dw, height: dh).bytes == expected)
    }
    for strip in [1, 2, 7, 16, 64, 512] {
      let resampler = StripResampler(
        sourceWidth: w, sourceHeight: h, layout: layout, width: dw, height: dh)
      Self.feed(source, to: resampler, strip: strip)
      let result = try resampler.finish()
      #expect(
        Self.differences(result.bytes, expected) == 0, "\(layout) \(w)x\(h)→\(dw)x\(dh) in strips of \(strip)"
      )
    }
  }

  @Test(arguments: [
    (3, 5, 90, 51, 30, 17), (0, 0, 97, 61, 40, 25), (11, 20, 280, 170, 31, 19), (1, 1, 1, 1, 1, 1),
  ])
  func aCropWindowGivesWhatResizingTheCroppedImageGives(
    crop: (Int, Int, Int, Int, Int, Int)
  ) throws {
    let (x, y, cw, ch, dw, dh) = crop
    let source = PixelFixtures.noise(width: 300, height: 211, layout: .rgb, seed: 5, padding: 1)
    let expected = Resampler.resize(
      Self.cropped(source, x: x, y: y, width: cw, height: ch), width: dw, height: dh)
    let resampler = StripResampler(
      sourceWidth: 300, sourceHeight: 211, layout: .rgb,
      window: .init(x: Double(x), y: Double(y), width: Double(cw), height: Double(ch)), width: dw, height: dh)
    Self.feed(source, to: resampler, strip: 16)
    #expect(Self.differences(try resampler.finish().bytes, expected.bytes) == 0, "\(crop)")
  }

  @Test func croppedAwayRowsAndColumnsAreNeverRead() throws {
    // The same picture inside two different surroundings; the window sees only the picture.
    let picture = PixelFixtures.noise(width: 120, height: 80, layout: .gray, seed: 9)
    func framed(_ fill: UInt8) -> PixelBuffer {
      var bytes = [UInt8](repeating: fill, count: 200 * 150)
      for row in 0..<80 {
        bytes.replaceSubrange(
          ((row + 30) * 200 + 50)..<((row + 30) * 200 + 170),
          with: picture.bytes[(row * 120)..<((row + 1) * 120)])
      }
      return PixelBuffer(width: 200, height: 150, layout: .gray, bytes: bytes)
    }
    var results: [[UInt8]] = []
    for fill in [0, 255] as [UInt8] {
      let resampler = StripResampler(
        sourceWidth: 200, sourceHeight: 150, layout: .gray,
        window: .init(x: 50, y: 30, width: 120, height: 80),
        width: 37, height: 23)
      #expect(resampler.rows == 30..<110)
      // Only the strips that hold window rows are fed: the rest need not be decoded at all.
      let image = framed(fill)
      for first in stride(from: 16, to: 112, by: 16) {
        resampler.consume(Self.rows(image, first, 16), at: first)
      }
      results.append(try resampler.finish().bytes)
    }
    #expect(Self.differences(results[0], results[1]) == 0)
    #expect(Self.differences(results[0], Resampler.resize(picture, width: 37, height: 23).bytes) == 0)
  }

  @Test func aTallImageFedInStripsHoldsOnlyAFewRows() throws {
    // 8 000 rows in strips of 64, with and without the box stage: what is kept between strips
    // is a window's worth of rows, never the image.
    for (width, height, dw, dh) in [(300, 8000, 150, 2667), (300, 8000, 30, 800)] {
      let source = PixelFixtures.noise(width: width, height: height, layout: .gray, seed: 2)
      let resampler = StripResampler(
        sourceWidth: width, sourceHeight: height, layout: .gray, width: dw, height: dh)
      Self.feed(source, to: resampler, strip: 64)
      #expect(resampler.isComplete)
      #expect(
        resampler.peakHeldRows < 100, "\(width)x\(height)→\(dw)x\(dh): \(resampler.peakHeldRows) rows held")
      #expect(
        Self.differences(try resampler.finish().bytes, Resampler.resize(source, width: dw, height: dh).bytes)
          == 0
      )
    }
  }

  @Test func rowsThatNeverArriveAreReportedAsCorruptNotACrash() {
    // A tile decoder that runs out of tiles two thirds of the way down.
    let source = PixelFixtures.noise(width: 64, height: 96, layout: .gray, seed: 4)
    let resampler = StripResampler(sourceWidth: 64, sourceHeight: 96, layout: .gray, width: 16, height: 24)
    resampler.consume(Self.rows(source, 0, 64), at: 0)
    #expect(!resampler.isComplete)
    #expect(throws: PipelineError.self) { try resampler.finish() }
    do {
      _ = try resampler.finish()
    } catch {
      #expect(error.code == "corrupt")
    }
  }
}
