import ImageCodecs

/// Resamples to the output size with Lanczos-3, in stored orientation: fitting the box is
/// decided on the upright size (so rotated images get the right box), and rotating the small
/// result afterwards touches far fewer pixels (imgproxy's processing.go also scales before
/// `rotateAndFlip`). Never upscales.
enum ResizeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let target = c.storedOutputSize
    if var planes = c.planes {
      // Chroma goes straight to its output size (half of each even side, all of an odd one),
      // whatever its stored subsampling, mapped by its extent so it stays registered with the
      // luma; orienting then keeps it aligned and merging needs no padding.
      let chroma = YCbCrPlanes.chromaSize(width: target.width, height: target.height)
      let extent = planes.chromaExtent
      if (planes.width, planes.height) != target {
        planes.luma = Resampler.resize(planes.luma, width: target.width, height: target.height)
      }
      // A plane of the right count whose last sample overhangs still needs remapping.
      if (planes.cb.width, planes.cb.height) != chroma
        || extent != (Double(chroma.width), Double(chroma.height))
      {
        planes.cb = Resampler.resize(planes.cb, width: chroma.width, height: chroma.height, extent: extent)
        planes.cr = Resampler.resize(planes.cr, width: chroma.width, height: chroma.height, extent: extent)
      }
      planes.subsampling = YCbCrPlanes.subsampling(width: target.width, height: target.height)
      c.planes = planes
      return
    }
    let pixels = try c.requirePixels()
    guard (pixels.width, pixels.height) != target else { return }
    c.pixels = Resampler.resize(pixels, width: target.width, height: target.height)
  }
}
