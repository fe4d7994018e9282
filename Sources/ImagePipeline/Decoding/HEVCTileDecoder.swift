import ImageCodecs

/// HEIF images the plan sends to the fast path (`HEIFDecodePath.hevc`): HEVC pictures decoded by
/// libavcodec straight into the output, never into a full-size image.
///
/// Each row of grid tiles (or band of a single picture) is pasted into one strip as wide as the
/// image — the one copy a sample makes, 10-bit samples rounded to 8 bits on the way — and the
/// strip is fed to `PlanesResampler`, which keeps the luma and resamples each chroma plane
/// straight to the output's 4:2:0 size, cropped to the plan's geometry (`clap`, a grid's
/// padding). Tiles wholly outside the crop are never decoded; the run's checkpoint is checked
/// before every tile. The planes come back at the output size, already upright (the resampler
/// writes each output row where the orientation puts it); RGB is made only at the output size.
///
/// Alpha images, and matrices `YCbCrPlanes` cannot carry (identity/GBR, YCgCo), take the RGB
/// route instead: each strip is made RGB (chroma repeated, as libheif does), composited onto
/// white with the decoded alpha plane, and resampled as RGB.
///
/// Geometry comes from what was decoded: every picture must have the size the plan gives it (a
/// grid tile its tile size, a single item its SPS size) and the format of its `hvcC`, or the
/// decode stops as `corrupt` before anything is pasted; so an `ispe` that disagrees with the
/// coded size never stretches the picture.
struct HEVCTileDecoder: ImageDecoder {
  let plan: HEIFDecodePlan

  /// Rows of a single picture pasted and resampled at a time (a grid pastes a row of tiles).
  static let bandRows = 256

  /// Where the decoded image goes: its crop and the size and orientation of what `decode`
  /// returns.
  struct Layout {
    var geometry: HEIFGeometry
    /// The size `decode` returns, in stored orientation.
    var target: (width: Int, height: Int)
    /// What makes the result upright when the HEIF transforms are applied here (nil: the
    /// orientation policy's EXIF orientation stands).
    var orientation: Orientation?
  }

  /// The crop and output size for `request`. The plan's stored size is the one every picture is
  /// checked against while decoding, so this is the geometry of what is decoded.
  func layout(_ request: DecodeRequest) -> Layout {
    let applies = !request.orientation.ignoreHEIFTransformations
    let stored = plan.storedSize
    let geometry = plan.geometry(width: stored.width, height: stored.height, applyTransforms: applies)
    // `request.target` is in the orientation the policy applies (none for HEIF transforms, which
    // libheif applies itself): turn it upright, then into the geometry's stored orientation.
    var display = request.target
    if request.orientation.apply.swapsDimensions { display = (display.height, display.width) }
    let orientation = applies ? geometry.orientation : request.orientation.apply
    let target = orientation.swapsDimensions ? (display.height, display.width) : display
    return Layout(geometry: geometry, target: target, orientation: applies ? geometry.orientation : nil)
  }

  func plannedSize(_ request: DecodeRequest) -> (width: Int, height: Int) { layout(request).target }

  /// The strip, the libavcodec pictures (a few of a tile each), the alpha plane, the RGB strip
  /// of the RGB route, and the output planes and their RGB, oriented and encoded copies.
  func estimatedBytes(_ request: DecodeRequest, output: (width: Int, height: Int)) -> Int {
    let stored = plan.storedSize
    let coded = plan.image.codedItems.first?.expectedSize ?? stored
    let stripRows = plan.image.grid == nil ? min(coded.height, Self.bandRows) : coded.height
    let deep = (plan.image.codedItems.first?.hevc?.bitDepthLuma ?? 8) > 8 ? 2 : 1
    let strip = HEVCStrip.bytes(width: stored.width, height: stripRows, subsampling: (1, 1))
    let pictures = 4 * coded.width * coded.height * 3 * deep
    let alpha = plan.alpha == nil ? 0 : stored.width * stored.height + stored.width * stripRows * 3
    let outputBytes = output.width * output.height * 3 * 3
    return strip + pictures + alpha + outputBytes + (8 << 20)
  }

  func decode(_ request: DecodeRequest) throws(PipelineError) -> DecodedImage {
    let limits = request.configuration.limits
    let configuration = HEVCDecoder.Configuration(
      threads: request.configuration.hevcThreads, maximumDimension: min(limits.maxDimension, 65_535),
      maximumPixels: limits.maxPixels)
    guard let source = HEVCTileSource(plan.image, input: request.input, configuration: configuration) else {
      throw .internal("the HEVC path was given an image it does not decode", detail: "\(plan.image.itemType)")
    }
    let layout = layout(request)
    let alpha = try plan.alpha.map { alpha throws(PipelineError) in
      try Self.decodeAlpha(alpha.image, input: request.input, configuration: configuration, request: request)
    }
    // The planar route writes its output upright (no orienting pass, no second set of planes).
    let upright = layout.orientation ?? request.orientation.apply
    let run = HEVCTileRun(
      source: source, plan: plan, layout: layout, checkpoint: request.checkpoint, alpha: alpha,
      premultiplied: plan.alpha?.premultiplied ?? false, orientation: upright)
    let content = try run.decode()
    guard let format = run.format else { throw .internal("the HEVC path decoded no picture") }
    let colour = Self.colour(of: plan, decoded: format)
    if case .planes = content {
      return DecodedImage(content: content, colour: colour, orientation: .up, applied: upright)
    }
    return DecodedImage(content: content, colour: colour, orientation: layout.orientation)
  }

  /// The colour of the decoded samples: the `colr` ICC profile, else the `colr` nclx. The
  /// coded stream's VUI says how its Y′CbCr encodes R′G′B′ (matrix and range, which the planes
  /// carry), but its primaries and transfer are not used for colour management: libheif 1.15,
  /// which decodes every other HEIF here, ignores them too, and a file must not look different
  /// depending on which path took it (the differential test holds the two to the same colours).
  static func colour(of plan: HEIFDecodePlan, decoded: HEVCFrameFormat) -> ColourDescription {
    for case .icc(let profile) in plan.colour { return .icc(profile) }
    for case .nclx(let primaries, let transfer, let matrix, let fullRange) in plan.colour {
      return .nclx(
        NCLXColour(
          colourPrimaries: primaries, transferCharacteristics: transfer, matrixCoefficients: matrix,
          fullRange: fullRange))
    }
    return .untagged
  }

  /// The alpha image decoded whole into one 8-bit plane of the colour image's stored size (alpha
  /// is full range whatever the stream says, as libheif reads it).
  static func decodeAlpha(
    _ image: HEIFImagePlan, input: UnsafeRawBufferPointer, configuration: HEVCDecoder.Configuration,
    request: DecodeRequest
  ) throws(PipelineError) -> AlphaPlane {
    guard let source = HEVCTileSource(image, input: input, configuration: configuration) else {
      throw .internal("the alpha image is not one the HEVC path decodes", detail: "\(image.itemType)")
    }
    let size = source.size
    let plane = AlphaPlane(width: size.width, height: size.height)
    let depth: HEVCPaste.Depth =
      source.bitDepth > 8
      ? .table(HEVCSampleScale.table(bitDepth: source.bitDepth, fullRange: true, chroma: false)) : .eightBit
    for row in 0..<source.rows {
      for column in 0..<source.columns {
        let place = source.placement(row: row, column: column)
        guard place.width > 0, place.height > 0 else { continue }
        try request.checkpoint.check()
        try source.decode(row: row, column: column) { frame throws(PipelineError) in
          HEVCPaste.copy(
            frame.plane(0), rows: 0..<place.height, count: place.width, depth: depth, to: plane.plane,
            atRow: place.y, atColumn: place.x)
        }
      }
    }
    return plane
  }
}

/// A decoded alpha plane, 8-bit, one byte per pixel of the colour image.
final class AlphaPlane {
  let width: Int
  let height: Int
  let plane: HEVCStrip.Plane

  init(width: Int, height: Int) {
    self.width = width
    self.height = height
    let base = UnsafeMutablePointer<UInt8>.allocate(capacity: width * height)
    // Cleared (transparent) for the same reason as `HEVCStrip`'s planes.
    base.initialize(repeating: 0, count: width * height)
    plane = HEVCStrip.Plane(base: base, rowBytes: width)
  }

  deinit { plane.base.deallocate() }
}
