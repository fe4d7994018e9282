import ImageCodecs

/// Turns a JPEG's resized, upright YCbCr planes into RGB pixels at the output size, for the
/// colour and encode steps (a no-op on the RGB path).
enum MergePlanesStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard let planes = c.planes else { return }
    do {
      c.pixels = try JPEGCodec.rgb(from: planes)
    } catch {
      throw PipelineError(error, while: "merging planes")
    }
    c.planes = nil
  }
}
