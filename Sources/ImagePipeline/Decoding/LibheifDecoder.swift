import ImageCodecs

/// HEIF and AVIF through libheif 1.15: the primary image only, as 8-bit RGB(A) (a monochrome one
/// as full-range gray), with the file's transformations applied or ignored as the orientation
/// policy decided, after the iPhone 16 `iref` fix and with the layers `a1op`/`lsel` select. libheif 1.15 cannot be interrupted: `heif_decode_image` runs to its end (its
/// decoding options have progress callbacks but no way to cancel; that came in later
/// versions), so a deadline or a hang-up is noticed only when it returns.
struct LibheifDecoder: ImageDecoder {
  /// The box reader's reading of the file.
  let boxes: HEIFBoxInfo

  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int) {
    (request.header.width, request.header.height)
  }

  // libheif rounds `clap` itself; only insist that nothing larger than `ispe` came out.
  func accepts(width: Int, height: Int, for request: DecodeRequest) -> Bool {
    width * height <= boxes.width * boxes.height
  }

  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage {
    let patched = HEIFReferencePatch.apply(to: request.input, info: boxes)
    let options = HEIFCodec.Options(
      ignoreTransformations: request.orientation.ignoreHEIFTransformations,
      decodingThreads: request.configuration.heifThreads,
      maximumDimension: request.configuration.limits.maxDimension,
      monochrome: boxes.plan?.image.isMonochrome ?? false)
    let image = try PipelineError.decoding {
      if let patched { return try HEIFCodec.decode(patched, options: options) }
      return try HEIFCodec.decode(request.input, options: options)
    }
    // libheif also reads the colour of the coded stream (VUI) that the box reader cannot see;
    // an ICC profile from either wins over nclx from either.
    let colour: ColourDescription
    if let profile = image.info.colour.iccProfile ?? request.declaredColour.iccProfile {
      colour = .icc(profile)
    } else if let nclx = image.info.colour.nclx ?? request.declaredColour.nclx {
      colour = .nclx(nclx)
    } else {
      colour = .untagged
    }
    return DecodedImage(content: .pixels(image.pixels), colour: colour)
  }
}
