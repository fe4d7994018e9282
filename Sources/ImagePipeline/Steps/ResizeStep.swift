/// Resamples to the output size with Lanczos-3, in stored orientation: fitting the box is
/// decided on the upright size (so rotated images get the right box), and rotating the small
/// result afterwards touches far fewer pixels (imgproxy's processing.go also scales before
/// `rotateAndFlip`). Never upscales.
enum ResizeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let pixels = try c.requirePixels()
    let target = c.storedOutputSize
    guard (pixels.width, pixels.height) != target else { return }
    c.pixels = Resampler.resize(pixels, width: target.width, height: target.height)
  }
}
