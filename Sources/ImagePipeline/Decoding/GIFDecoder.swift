import ImageCodecs

/// GIF through giflib: the first frame on its canvas, as RGBA.
struct GIFDecoder: ImageDecoder {
  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int) {
    (request.header.width, request.header.height)
  }

  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage {
    let pixels = try PipelineError.decoding {
      try GIFCodec.decode(request.input, maxPixels: request.configuration.limits.maxPixels)
    }
    return DecodedImage(content: .pixels(pixels), colour: request.declaredColour)
  }
}
