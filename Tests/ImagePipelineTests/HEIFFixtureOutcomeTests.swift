import ImageCodecs
import Testing

@testable import ImagePipeline

/// The generated fixtures through the whole pipeline (`Pipeline.process`), on the path the
/// path rule gives them: what a client gets for each structure libheif 1.15 gets wrong.
@Suite(.timeLimit(.minutes(2)))
struct HEIFFixtureOutcomeTests {
  typealias Colour = HEIFDecodePlanTests.Colour

  static func process(_ name: String, fastPath: Bool = true) throws -> ProcessedImage {
    var configuration = Pipeline.Configuration()
    configuration.hevcFastPath = fastPath
    return try Pipeline(configuration: configuration).process(try HEIFDecodePlanTests.fixture(name))
  }

  /// The colours at (3/8, 3/8), (5/8, 3/8), (3/8, 5/8), (5/8, 5/8) of the picture: inside each
  /// quadrant, away from its borders and from the marker (which lies between 1/8 and 2/7 of a
  /// corner, whichever way the picture was turned).
  static func quadrants(_ jpeg: [UInt8]) throws -> [Colour] {
    let image = try JPEGCodec.decode(jpeg)
    let (w, h) = (image.width, image.height)
    return [(3, 3), (5, 3), (3, 5), (5, 5)].map { Colour.at(image, w * $0.0 / 8, h * $0.1 / 8) }
  }

  @Test func primaryIdenIsItsSourceWithTheSourcesAndItsOwnTransforms() throws {
    let result = try Self.process("iden-primary.heic")
    #expect((result.width, result.height) == (96, 128))
    // Stored red/green/blue/yellow, turned 90° anti-clockwise (the source's irot), then left and
    // right exchanged (the iden's imir).
    #expect(try Self.quadrants(result.jpeg) == [.yellow, .green, .blue, .red])
    #expect(result.source.orientation == 7)
  }

  @Test(arguments: [true, false])
  func nonPrimaryIdenLeavesThePrimaryReadable(fastPath: Bool) throws {
    let result = try Self.process("iden-non-primary.heic", fastPath: fastPath)
    #expect((result.width, result.height) == (128, 96))
    #expect(try Self.quadrants(result.jpeg) == [.red, .green, .blue, .yellow])
  }

  @Test(arguments: [true, false])
  func ispeMismatchComesOutUprightAndUndistortedOnBothPaths(fastPath: Bool) throws {
    let result = try Self.process("ispe-mismatch-irot.heic", fastPath: fastPath)
    #expect((result.width, result.height) == (96, 128))
    // Stored red/green/blue/yellow turned 90° clockwise (irot 3).
    #expect(try Self.quadrants(result.jpeg) == [.blue, .red, .yellow, .green])
    let marker = HEIFDecodePlanTests.whiteBox(try JPEGCodec.decode(result.jpeg))
    #expect(abs(marker.width - marker.height) <= 2 && marker.width >= 12, "marker \(marker)")
  }

  @Test(arguments: [
    ("pred-primary.heic", "unsupported_format"), ("essential-unknown.heic", "unsupported_format"),
    ("sequence-msf1.heic", "animated_unsupported"), ("bad-grid-tile.heic", "corrupt"),
  ])
  func refusedFixturesNeverBecomeAPicture(name: String, code: String) {
    #expect {
      _ = try Self.process(name)
    } throws: { error in
      (error as? PipelineError)?.code == code
    }
  }

  @Test(arguments: ["10bit-422.heic", "alpha.heic", "idat-item.heic", "multi-extent.heic"])
  func acceptedFixturesKeepTheirQuadrantsOnTheHEVCPath(name: String) throws {
    let result = try Self.process(name)
    // The alpha fixture's right half is 25 % opaque: over white, green and yellow turn white.
    let expected: [Colour] =
      name == "alpha.heic" ? [.red, .white, .blue, .white] : [.red, .green, .blue, .yellow]
    #expect(try Self.quadrants(result.jpeg) == expected)
  }
}
