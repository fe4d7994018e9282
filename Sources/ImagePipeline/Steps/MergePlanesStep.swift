import ImageCodecs

/// Turns the resized, upright Y′CbCr planes into RGB pixels at the output size, for the colour
/// and encode steps (a no-op on the RGB path). JFIF planes go through TurboJPEG's SIMD
/// conversion, the rest (other matrices, video range) through `YCbCrConverter`.
enum MergePlanesStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard let planes = c.planes else { return }
    if planes.isJFIF {
      do {
        c.pixels = try JPEGCodec.rgb(from: planes)
      } catch {
        throw PipelineError(error, while: "merging planes")
      }
    } else {
      c.pixels = YCbCrConverter.rgb(from: planes)
    }
    c.planes = nil
  }
}
