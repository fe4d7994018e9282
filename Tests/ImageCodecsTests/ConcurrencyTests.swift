import ImageCodecs
import TestSupport
import Testing

/// The codecs keep no shared state except the colour-transform cache; decoding the same files on
/// many threads at once gives the same pixels as decoding them one at a time.
@Suite(.enabled(if: Corpus.directory != nil, "skipped: corpus not present"))
struct ConcurrencyTests {
  static func work(_ name: String) throws -> [UInt8] {
    let data = try Fixtures.corpus(name)
    switch name.split(separator: ".").last {
    case "jpg":
      var buffer = try JPEGCodec.decode(data, scaleToAtLeast: (200, 200))
      if let icc = JPEGCodec.iccProfile(data) { ColourTransform.toSRGB(&buffer, iccProfile: icc) }
      return try JPEGCodec.encode(buffer, quality: 85)
    case "png": return try PNGCodec.decode(data).bytes
    case "webp": return try WebPCodec.decode(data).bytes
    case "gif": return try GIFCodec.decode(data).bytes
    default: return try HEIFCodec.decode(data).pixels.bytes
    }
  }

  @Test func parallelDecodesMatchSerialOnes() async throws {
    let names = [
      "jpeg-icc-p3-d65.jpg", "jpeg-icc-adobe-rgb-1998.jpg", "jpeg-cmyk-swop-icc.jpg", "jpeg-orient-3.jpg",
      "png-palette-trns.png", "webp-lossy-alpha.webp", "gif-animated.gif", "heic-alpha-10bit-odd-size.heif",
    ]
    let serial = try names.map { try Self.work($0) }
    let parallel = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
      for _ in 0..<3 {
        for (i, name) in names.enumerated() {
          group.addTask { (i, try Self.work(name)) }
        }
      }
      var results: [(Int, [UInt8])] = []
      for try await result in group { results.append(result) }
      return results
    }
    #expect(parallel.count == names.count * 3)
    for (i, bytes) in parallel { #expect(bytes == serial[i], "\(names[i])") }
  }
}
