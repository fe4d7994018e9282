import ImageCodecs

/// Resamples to the output size with Lanczos-3, in stored orientation: fitting the box is
/// decided on the upright size (so rotated images get the right box), and rotating the small
/// result afterwards touches far fewer pixels (imgproxy's processing.go also scales before
/// `rotateAndFlip`). Never upscales. The image is fed to the resampler in bands, with the run's
/// checkpoint checked between them.
enum ResizeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let target = c.storedOutputSize
    if let planes = c.planes {
      // Chroma goes straight to its output size (half of each even side, all of an odd one),
      // whatever its stored subsampling, mapped by its extent so it stays registered with the
      // luma; orienting then keeps it aligned and merging needs no padding.
      c.planes = try PlanesResampler.resize(
        planes, width: target.width, height: target.height, checkpoint: c.checkpoint)
      return
    }
    let pixels = try c.requirePixels()
    guard (pixels.width, pixels.height) != target else { return }
    c.pixels = try Resampler.resize(
      pixels, width: target.width, height: target.height, checkpoint: c.checkpoint)
  }
}
