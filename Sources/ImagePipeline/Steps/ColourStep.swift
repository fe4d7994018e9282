import ImageCodecs

/// Converts to sRGB from the colour the decoder reported, on the resized image (the fewest
/// pixels); the one place pixels change colour space (a CMYK JPEG's profile is applied by its
/// decoder, which then reports sRGB). Untagged pixels are sRGB and are left alone.
enum ColourStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    if var planes = c.planes {
      // Planes the encoder takes (see `MergePlanesStep`) are converted in place, band by band.
      c.planes = nil
      try PlanesColour.toJFIFsRGB(&planes, from: c.colour)
      c.planes = planes
      return
    }
    var pixels = try c.requirePixels()
    // The context lets go of the buffer first, so the conversion changes the only reference in
    // place instead of copying the whole image (copy-on-write).
    c.pixels = nil
    // The outcome says why a profile was ignored (unreadable, wrong colour space); the pixels are
    // then treated as sRGB, as browsers do.
    _ = ColourTransform.toSRGB(&pixels, from: c.colour)
    c.pixels = pixels
  }
}
