import ImageCodecs

/// Encodes with TurboJPEG: 4:2:0 for photos (from planes when the planar path kept them),
/// 4:4:4 for lossless sources (screenshots), one gray component for gray sources.
enum EncodeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    if let planes = c.planes {
      // JFIF 4:2:0 planes from `PlanesColour`: encoded as they are; of a gray source (neutral
      // chroma), the luma alone.
      let gray = c.source.isMonochrome
      do {
        c.output =
          try gray
          ? JPEGCodec.encode(planes.luma, quality: c.configuration.quality, subsampling: .gray)
          : JPEGCodec.encode(planes: planes, quality: c.configuration.quality)
      } catch {
        throw PipelineError(error, while: "encoding")
      }
      c.planes = nil
      c.reservation?.release()
      return
    }
    let pixels = try c.requirePixels()
    do {
      c.output = try JPEGCodec.encode(
        pixels, quality: c.configuration.quality, subsampling: c.source.outputSubsampling)
    } catch {
      throw PipelineError(error, while: "encoding")
    }
    c.pixels = nil
    c.reservation?.release()
  }
}

/// What the encoder needs to know of the source, whatever it was: an image's header says it, a
/// video frame is a photo-like colour picture.
struct SourceShape: Sendable, Equatable {
  /// The source holds only gray: the output is one gray component.
  var isMonochrome = false
  /// PNG, lossless WebP, GIF: usually screenshots, encoded 4:4:4.
  var isLosslessSource = false

  /// How the output (and each rendition) is subsampled: one gray component for a gray source
  /// (its pixels may be RGB after alpha was flattened onto white: still gray), 4:4:4 for lossless
  /// sources, else 4:2:0.
  var outputSubsampling: JPEGCodec.EncodeSubsampling {
    isMonochrome ? .gray : isLosslessSource ? .s444 : .s420
  }
}
