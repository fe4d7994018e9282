import ImageCodecs

/// Turns the resized, upright Y′CbCr planes into RGB pixels at the output size, for the colour
/// and encode steps (a no-op on the RGB path, and for planes the encoder takes as they are). JFIF planes go through TurboJPEG's SIMD
/// conversion, the rest (other matrices, video range) through `YCbCrConverter`.
enum MergePlanesStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard let planes = c.planes else { return }
    // 4:2:0 output with no renditions to make stays planes to the encoder (`PlanesColour`).
    if encodesPlanes(c, planes) { return }
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

  /// Whether the colour and encode steps take `planes` as they are: a 4:2:0 output of even
  /// sides (`PlanesColour.encodable`) with no renditions, which are made from pixels.
  static func encodesPlanes(_ c: PipelineContext, _ planes: YCbCrPlanes) -> Bool {
    c.profiles.isEmpty && !c.source.isLosslessSource && PlanesColour.encodable(planes)
  }
}
