/// Applies the orientation the policy chose (libheif has already applied HEIF transforms).
enum OrientStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    c.pixels = Orienter.apply(c.orientation.apply, to: try c.requirePixels())
  }
}
