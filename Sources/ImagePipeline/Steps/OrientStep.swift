/// Applies the orientation the policy chose (libheif has already applied HEIF transforms).
enum OrientStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    if var planes = c.planes {
      // Chroma sides are each the matching luma side or its exact half, so they turn with it.
      let orientation = c.orientation.apply
      planes.luma = Orienter.apply(orientation, to: planes.luma)
      planes.cb = Orienter.apply(orientation, to: planes.cb)
      planes.cr = Orienter.apply(orientation, to: planes.cr)
      if orientation.swapsDimensions {
        planes.subsampling = (planes.subsampling.vertical, planes.subsampling.horizontal)
      }
      c.planes = planes
      return
    }
    c.pixels = Orienter.apply(c.orientation.apply, to: try c.requirePixels())
  }
}
