import ImageCodecs

/// Decodes the pixels with the decoder `decoder(for:configuration:)` chooses, and holds it to
/// the size the headers promised.
enum DecodeStep {
  /// The decoder for an input: the one place that decides which code decodes what.
  static func decoder(for header: ImageHeader, configuration: Pipeline.Configuration) -> any ImageDecoder {
    switch header.container {
    case .jpeg(let info): JPEGDecoder(markers: info, planar: configuration.planarJPEG)
    case .heif(let info):
      // The plan's path rule (`HEIFPathRule`) decides: libheif takes what the HEVC path declines.
      if configuration.hevcFastPath, let plan = info.plan, plan.path == .hevc {
        HEVCTileDecoder(plan: plan)
      } else {
        LibheifDecoder(boxes: info)
      }
    case .png: PNGDecoder()
    case .webp: WebPDecoder()
    case .gif: GIFDecoder()
    }
  }

  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let request = try c.decodeRequest()
    let decoder = decoder(for: request.header, configuration: c.configuration)
    let decoded = try decoder.decode(request)
    // The decoded size must be what the headers promised (a lying header must not slip through),
    // in stored orientation whatever the decoder has turned.
    var size = decoded.size
    if decoded.applied.swapsDimensions { size = (size.height, size.width) }
    guard decoder.accepts(width: size.width, height: size.height, for: request) else {
      throw .corrupt(
        "the decoded image (\(size.width)x\(size.height)) does not match its header (\(request.header.width)x\(request.header.height))"
      )
    }
    switch decoded.content {
    case .planes(let planes): c.planes = planes
    case .pixels(let pixels): c.pixels = pixels
    }
    c.colour = decoded.colour
    if let orientation = decoded.orientation { c.orientation.apply = orientation }
  }
}
