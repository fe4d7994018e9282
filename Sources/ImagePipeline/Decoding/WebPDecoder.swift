import ImageCodecs

/// WebP through libwebp (one call): RGB, or RGBA with alpha; an animation gives its first frame.
struct WebPDecoder: ImageDecoder {
  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int) {
    (request.header.width, request.header.height)
  }

  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage {
    let pixels = try PipelineError.decoding { try WebPCodec.decode(request.input) }
    return DecodedImage(content: .pixels(pixels), colour: request.declaredColour)
  }
}
