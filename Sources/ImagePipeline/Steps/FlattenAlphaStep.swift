/// Composites any alpha onto white (before resizing, so the resampler works on opaque RGB).
enum FlattenAlphaStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    if c.planes != nil { return }  // YCbCr has no alpha
    c.pixels = AlphaFlattener.flattenOntoWhite(try c.requirePixels())
  }
}
