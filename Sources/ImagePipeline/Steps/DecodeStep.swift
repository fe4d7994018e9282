import ImageCodecs

/// Decodes the pixels with the format's codec: JPEG shrinks on load (DCT scaling to the smallest
/// M/8 still ≥ the output size); HEIF decodes the primary image only, with transformations
/// applied or ignored as the orientation policy decided, after the iPhone 16 `iref` fix.
enum DecodeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let header = try c.requireHeader()
    do {
      switch header.container {
      case .jpeg(let info):
        // Planes pay off when the image is resized; at its own size the RGB path's chroma
        // upsampling is exact and cheap.
        if c.configuration.planarJPEG, decodeSize(c) != c.storedOutputSize,
          let planes = try JPEGCodec.decodePlanes(c.input, scaleToAtLeast: c.storedOutputSize)
        {
          c.planes = planes
          break
        }
        // Only a CMYK profile is applied while decoding; RGB and gray ones in the colour step.
        let cmykProfile = info.components == 4 ? c.iccProfile : nil
        c.pixels = try JPEGCodec.decode(c.input, scaleToAtLeast: c.storedOutputSize, iccProfile: cmykProfile)
        if info.components == 4 { c.iccProfile = nil }
      case .heif(let info):
        let bytes = HEIFReferencePatch.apply(to: c.input, info: info) ?? c.input
        let options = HEIFCodec.Options(
          ignoreTransformations: c.orientation.ignoreHEIFTransformations,
          decodingThreads: c.configuration.heifThreads,
          maximumDimension: c.configuration.limits.maxDimension)
        let image = try HEIFCodec.decode(bytes, options: options)
        c.pixels = image.pixels
        // libheif also reads the colour of the coded stream (VUI) that our box reader cannot see.
        c.iccProfile = image.info.colour.iccProfile ?? c.iccProfile
        if c.iccProfile == nil, let nclx = image.info.colour.nclx {
          c.nclx = (
            nclx.colourPrimaries, nclx.transferCharacteristics, nclx.matrixCoefficients, nclx.fullRange
          )
        }
      case .png:
        c.pixels = try PNGCodec.decode(c.input)
      case .webp:
        c.pixels = try WebPCodec.decode(c.input)
      case .gif:
        c.pixels = try GIFCodec.decode(c.input, maxPixels: c.configuration.limits.maxPixels)
      }
    } catch let error as PipelineError {
      throw error
    } catch {
      throw PipelineError(error, while: "decoding")
    }
    // The decoded size must be what the headers promised (a lying header must not slip through).
    if let pixels = c.pixels ?? c.planes?.luma, !matchesExpected(pixels, c, header) {
      throw .corrupt(
        "the decoded image (\(pixels.width)x\(pixels.height)) does not match its header (\(header.width)x\(header.height))"
      )
    }
  }

  static func matchesExpected(_ pixels: PixelBuffer, _ c: PipelineContext, _ header: ImageHeader) -> Bool {
    switch header.container {
    case .jpeg:
      let expected = decodeSize(c)
      return (pixels.width, pixels.height) == expected
    case .heif(let info):
      // clap rounding is libheif's; only insist that nothing larger than `ispe` came out.
      return pixels.width * pixels.height <= info.width * info.height
    default:
      return (pixels.width, pixels.height) == (header.width, header.height)
    }
  }

  /// The size the decoder will produce (for the memory estimate).
  static func decodeSize(_ c: PipelineContext) -> (width: Int, height: Int) {
    guard let header = c.header else { return (0, 0) }
    if header.format == .jpeg {
      return JPEGCodec.scaledSize(width: header.width, height: header.height, toAtLeast: c.storedOutputSize)
    }
    return (header.width, header.height)
  }
}
