import ImageCodecs

/// Encodes with TurboJPEG: 4:2:0 for photos, 4:4:4 for lossless sources (screenshots).
enum EncodeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
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
