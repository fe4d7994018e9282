import ImageCodecs

/// PNG through libpng's simplified API (one call): gray, RGB or RGBA, 16-bit reduced to 8.
struct PNGDecoder: ImageDecoder {
  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int) {
    (request.header.width, request.header.height)
  }

  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage {
    let pixels = try PipelineError.decoding { try PNGCodec.decode(request.input) }
    return DecodedImage(content: .pixels(pixels), colour: request.declaredColour)
  }
}
