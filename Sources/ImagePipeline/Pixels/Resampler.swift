import ImageCodecs

/// Fits images inside a bounding square and resamples whole images with a separable Lanczos-3
/// filter: a `StripResampler` fed the image as one strip (see there and `LanczosKernels` for
/// how). Only the kernels' group buffers (a few rows) are allocated besides the output.
enum Resampler {
  /// The size of a `width` × `height` image fitted inside `maxEdge` × `maxEdge`, never upscaled:
  /// the long edge becomes exactly `maxEdge` and the short one is rounded to nearest (at least 1).
  static func fitted(width: Int, height: Int, maxEdge: Int) -> (width: Int, height: Int) {
    precondition(width > 0 && height > 0 && maxEdge > 0, "fitted: sizes must be positive")
    let long = max(width, height)
    guard long > maxEdge else { return (width, height) }
    let short = max(1, (min(width, height) * maxEdge + long / 2) / long)
    return width >= height ? (maxEdge, short) : (short, maxEdge)
  }

  /// `image` fitted inside `maxEdge` (see `fitted`), or `image` itself when it already fits.
  static func fit(_ image: PixelBuffer, maxEdge: Int) -> PixelBuffer {
    let size = fitted(width: image.width, height: image.height, maxEdge: maxEdge)
    if size == (image.width, image.height) { return image }
    return resize(image, width: size.width, height: size.height)
  }

  /// `image` resampled to `width` × `height` with Lanczos-3 (tight rows).
  ///
  /// Straight-alpha RGBA is premultiplied first (colour must not bleed out of transparent
  /// pixels) and the result is returned premultiplied, with colour clamped to alpha, so that
  /// `AlphaFlattener` composites it exactly; the pipeline normally flattens before resizing,
  /// so this costs nothing on the usual path.
  ///
  /// `extent`, when given, is how many source samples across and down the destination spans
  /// (see `LanczosWeights.window`); by default the whole source.
  static func resize(
    _ image: PixelBuffer, width: Int, height: Int, extent: (width: Double, height: Double)? = nil
  ) -> PixelBuffer {
    // Without a checkpoint nothing can throw.
    (try? resize(image, width: width, height: height, extent: extent, checkpoint: nil))!
  }

  /// `resize`, fed in bands of `bandRows` rows with `checkpoint` checked before each (the
  /// pipeline's resize step: a cancelled or overdue run stops within a band).
  static func resize(
    _ image: PixelBuffer, width: Int, height: Int, extent: (width: Double, height: Double)? = nil,
    checkpoint: Checkpoint?, bandRows: Int = 512
  ) throws(PipelineError) -> PixelBuffer {
    precondition(width > 0 && height > 0, "resize: empty destination")
    var source = image
    if image.layout == .rgba && !image.premultiplied {
      source = AlphaFlattener.premultiplied(image)
    }
    let window = extent.map { StripResampler.Window(x: 0, y: 0, width: $0.width, height: $0.height) }
    let resampler = StripResampler(
      sourceWidth: source.width, sourceHeight: source.height, layout: source.layout, window: window,
      width: width, height: height)
    if let checkpoint {
      try resampler.consume(source, bandRows: bandRows, checkpoint: checkpoint)
    } else {
      resampler.consume(source, at: 0)
    }
    var output = try resampler.finish()
    output.premultiplied = source.premultiplied
    if output.layout == .rgba && output.premultiplied { clampColourToAlpha(&output) }
    return output
  }

  // Resampling overshoot can leave a premultiplied colour above its alpha; clamp it back so the
  // buffer stays valid premultiplied data.
  private static func clampColourToAlpha(_ image: inout PixelBuffer) {
    let count = image.width * image.height * 4
    image.bytes.withUnsafeMutableBufferPointer { p in
      for i in stride(from: 0, to: count, by: 4) {
        let a = p[i + 3]
        p[i] = min(p[i], a)
        p[i + 1] = min(p[i + 1], a)
        p[i + 2] = min(p[i + 2], a)
      }
    }
  }
}
