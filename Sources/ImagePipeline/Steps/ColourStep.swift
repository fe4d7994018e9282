import ImageCodecs

/// Converts to sRGB through the embedded ICC profile with lcms2, on the resized image (the
/// fewest pixels). Untagged input is sRGB and is left alone.
enum ColourStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    var pixels = try c.requirePixels()
    // The context lets go of the buffer first, so the conversion changes the only reference in
    // place instead of copying the whole image (copy-on-write).
    c.pixels = nil
    // The outcome says why a profile was ignored (unreadable, wrong colour space); the pixels are
    // then treated as sRGB, as browsers do.
    if let profile = c.iccProfile {
      _ = ColourTransform.toSRGB(&pixels, iccProfile: profile)
    } else if let nclx = c.nclx {
      let colour = NCLXColour(
        colourPrimaries: nclx.primaries, transferCharacteristics: nclx.transfer,
        matrixCoefficients: nclx.matrix, fullRange: nclx.fullRange)
      _ = ColourTransform.toSRGB(&pixels, nclx: colour)
    }
    c.pixels = pixels
  }
}
