import ImageCodecs
import TestSupport
import Testing

@testable import ImagePipeline

/// JPEGs libjpeg only warns about, through the whole pipeline on each of its JPEG routes (the
/// lossless transform, the planar decode, the RGB decode): a verified output that ends at EOI,
/// like the clean file's; the damaged ones keep their error codes.
@Suite(.timeLimit(.minutes(2)))
struct JPEGRecoveryPipelineTests {
  enum Route: CaseIterable {
    case lossless, planar, rgb

    var configuration: Pipeline.Configuration {
      var configuration = Pipeline.Configuration()
      if self != .lossless { configuration.maxEdge = 48 }
      configuration.planarJPEG = self == .planar
      return configuration
    }
  }

  static let accepted = [
    "jpeg-stray-bytes.jpg", "jpeg-extraneous-before-eoi.jpg", "jpeg-trailing-data.jpg",
    "jpeg-premature-last-row.jpg", "jpeg-progressive-trailing.jpg", "jpeg-cmyk-no-adobe.jpg",
  ]

  @Test(arguments: accepted, Route.allCases)
  func acceptedFilesBecomeVerifiedPictures(name: String, route: Route) throws {
    let result = try Pipeline(configuration: route.configuration).process(DecoderFixtures.bytes(name))
    // CMYK never takes the lossless path (its output must be RGB).
    #expect(result.losslessTransform == (route == .lossless && name != "jpeg-cmyk-no-adobe.jpg"))
    // The verifier refuses anything after EOI, and every segment but JFIF/DQT/SOF/DHT/SOS.
    try JPEGOutputVerifier.verify(result.jpeg)
    let output = try JPEGCodec.decode(result.jpeg)
    var reference = try PNGCodec.decode(DecoderFixtures.bytes("jpeg-reference.png"))
    if (reference.width, reference.height) != (output.width, output.height) {
      reference = try Resampler.resize(
        reference, width: output.width, height: output.height, checkpoint: .never)
    }
    let psnr = MonochromeOutputTests.psnr(output, reference)
    #expect(psnr >= 30, "\(name) on the \(route) route: \(psnr) dB")
  }

  @Test(arguments: ["jpeg-trailing-data.jpg", "jpeg-progressive-trailing.jpg", "jpeg-gray-trailing.jpg"])
  func trailingDataNeverReachesAnOutputOrARendition(name: String) throws {
    let input = try DecoderFixtures.bytes(name)
    for route in Route.allCases {
      let result = try Pipeline(configuration: route.configuration).process(input)
      try JPEGOutputVerifier.verify(result.jpeg)
      #expect(result.jpeg.count < input.count)
    }
    // The gray file stays one component on every route.
    if name == "jpeg-gray-trailing.jpg" {
      for route in Route.allCases {
        let jpeg = try Pipeline(configuration: route.configuration).process(input).jpeg
        #expect(try JPEGCodec.readHeader(jpeg).subsampling == .gray)
      }
    }
  }

  @Test(arguments: Route.allCases)
  func damagedScansKeepTheirErrorCodes(route: Route) throws {
    for (name, code) in [
      ("jpeg-scan-cut-early.jpg", "corrupt"), ("jpeg-bad-huffman.jpg", "corrupt"),
      ("jpeg-truncated.jpg", "truncated"),
    ] {
      #expect("\(name) on the \(route) route") {
        _ = try Pipeline(configuration: route.configuration).process(DecoderFixtures.bytes(name))
      } throws: { error in
        (error as? PipelineError)?.code == code
      }
    }
  }
}
