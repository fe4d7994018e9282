import ImageCodecs

/// Encodes with TurboJPEG: 4:2:0 for photos (from planes when the planar path kept them),
/// 4:4:4 for lossless sources (screenshots).
enum EncodeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    if let planes = c.planes {
      // JFIF 4:2:0 planes from `PlanesColour`: encoded as they are.
      do {
        c.output = try JPEGCodec.encode(planes: planes, quality: c.configuration.quality)
      } catch {
        throw PipelineError(error, while: "encoding")
      }
      c.planes = nil
      c.reservation?.release()
      return
    }
    let pixels = try c.requirePixels()
    let header = try c.requireHeader()
    let subsampling: JPEGCodec.EncodeSubsampling = header.isLosslessSource ? .s444 : .s420
    do {
      c.output = try JPEGCodec.encode(pixels, quality: c.configuration.quality, subsampling: subsampling)
    } catch {
      throw PipelineError(error, while: "encoding")
    }
    c.pixels = nil
    c.reservation?.release()
  }
}
