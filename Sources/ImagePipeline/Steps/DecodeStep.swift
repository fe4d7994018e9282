import ImageCodecs

/// Decodes the pixels with the format's codec: JPEG shrinks on load (DCT scaling to the smallest
/// M/8 still ≥ the output size), HEIF follows the orientation decision on transformations.
enum DecodeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let header = try c.requireHeader()
    do {
      switch header.format {
      case .jpeg:
        // Only a CMYK profile is applied while decoding; RGB and gray ones in the colour step.
        let cmykProfile = header.jpeg?.components == 4 ? c.iccProfile : nil
        c.pixels = try JPEGCodec.decode(c.input, scaleToAtLeast: c.storedOutputSize, iccProfile: cmykProfile)
        if cmykProfile != nil { c.iccProfile = nil }
      default:
        throw PipelineError.unsupported(header.format.displayName)
      }
    } catch let error as PipelineError {
      throw error
    } catch {
      throw PipelineError(error, while: "decoding")
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
