import ImageCodecs

/// Composites any alpha onto white (before resizing, so the resampler works on opaque RGB).
enum FlattenAlphaStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    c.pixels = AlphaFlattener.flattenOntoWhite(try c.requirePixels())
  }
}

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

/// Applies the orientation the policy chose (libheif has already applied HEIF transforms).
enum OrientStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    c.pixels = Orienter.apply(c.orientation.apply, to: try c.requirePixels())
  }
}

/// Converts to sRGB through the embedded ICC profile with lcms2, on the resized image (the
/// fewest pixels). Untagged input is sRGB and is left alone.
enum ColourStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    var pixels = try c.requirePixels()
    // The outcome says why a profile was ignored (unreadable, wrong colour space); the pixels are
    // then treated as sRGB, as browsers do.
    if let profile = c.iccProfile {
      _ = ColourTransform.toSRGB(&pixels, iccProfile: profile)
    } else if let nclx = c.nclx {
      let colour = NCLXColour(
        colourPrimaries: nclx.primaries, transferCharacteristics: nclx.transfer,
        matrixCoefficients: nclx.matrix, fullRange: nclx.fullRange)
      _ = ColourTransform.toSRGB(&pixels, nclx: colour)
    } else {
      return
    }
    c.pixels = pixels
  }
}

/// Encodes with TurboJPEG: 4:2:0 for photos, 4:4:4 for lossless sources (screenshots).
enum EncodeStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    let pixels = try c.requirePixels()
    let header = try c.requireHeader()
    let subsampling: JPEGCodec.EncodeSubsampling = header.isLosslessSource ? .s444 : .s420
    do {
      c.output = try JPEGCodec.encode(pixels, quality: c.configuration.quality, subsampling: subsampling)
    } catch {
      throw PipelineError(error, while: "encoding")
    }
    c.pixels = nil
    c.reservation?.release()
  }
}

/// Re-parses the output: only the JFIF structure may remain, or the pipeline fails.
enum VerifyStep {
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard let output = c.output else { throw .internal("no output to verify") }
    do {
      try JPEGOutputVerifier.verify(output)
    } catch {
      throw .internal("the output JPEG failed verification", detail: "\(error)")
    }
  }
}
