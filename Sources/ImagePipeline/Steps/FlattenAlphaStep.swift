/// Composites any alpha onto white (before resizing, so the resampler works on opaque RGB).
enum FlattenAlphaStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    c.pixels = AlphaFlattener.flattenOntoWhite(try c.requirePixels())
  }
}
