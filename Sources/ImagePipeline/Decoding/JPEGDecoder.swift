import ImageCodecs
import ImageContainers

/// JPEG through TurboJPEG: Y′CbCr planes when the image is resized, RGB (or gray) otherwise and
/// for RGB, gray, CMYK and YCCK files. Both shrink on load to the smallest DCT scale (M/8) still
/// ≥ the target. TurboJPEG 2.1 decodes in one call, so there is no point to stop at inside it.
struct JPEGDecoder: ImageDecoder {
  /// The marker walk's reading (component count for CMYK).
  let markers: JPEGMarkerInfo
  /// Whether Y′CbCr files may be decoded to planes (`Pipeline.Configuration.planarJPEG`).
  let planar: Bool

  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int) {
    let header = request.header
    return JPEGCodec.scaledSize(width: header.width, height: header.height, toAtLeast: request.target)
  }

  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage {
    // Planes pay off when the image is resized; at its own size the RGB path's chroma
    // upsampling is exact and cheap.
    if planar, plannedSize(request) != request.target,
      let planes = try PipelineError.decoding({
        try JPEGCodec.decodePlanes(request.input, scaleToAtLeast: request.target)
      })
    {
      return DecodedImage(content: .planes(planes), colour: request.declaredColour)
    }
    // Only a CMYK profile is applied while decoding (its pixels are then sRGB); RGB and gray
    // profiles are the colour step's.
    let cmyk = markers.components == 4
    let pixels = try PipelineError.decoding {
      try JPEGCodec.decode(
        request.input, scaleToAtLeast: request.target,
        iccProfile: cmyk ? request.declaredColour.iccProfile : nil)
    }
    return DecodedImage(content: .pixels(pixels), colour: cmyk ? .untagged : request.declaredColour)
  }
}
