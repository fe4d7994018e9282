import ImageCodecs

/// A model profile's image: a verified JPEG like the pipeline's own output, smaller.
public struct ProfileRendition: Sendable {
  public var profile: ModelProfile
  public var jpeg: [UInt8]
  public var width: Int
  public var height: Int

  public init(profile: ModelProfile, jpeg: [UInt8], width: Int, height: Int) {
    self.profile = profile
    self.jpeg = jpeg
    self.width = width
    self.height = height
  }
}

/// Makes the renditions an upload asked for, in the same run as its default output.
///
/// They are made from the default output's pixels just before those are encoded: upright,
/// sRGB, flattened and already fitted into `maxEdge` — everything but the size decided once —
/// so a rendition costs one more resample and encode, never another decode of the upload, and
/// suffers no JPEG generation loss. A lossless-path upload has no pixels: its output (the
/// source's own DCT data, rearranged) is decoded instead. A profile whose size is the default
/// output's own gets no rendition: the default is that profile's image.
enum RenditionStep {
  /// Standard path: from the colour-converted pixels, before `encode`.
  static func run(_ c: inout PipelineContext) throws(PipelineError) {
    guard !c.profiles.isEmpty else { return }
    let pixels = try c.requirePixels()
    c.renditions = try make(
      targets(c.profiles, width: pixels.width, height: pixels.height), from: pixels,
      subsampling: c.source.outputSubsampling,
      quality: c.configuration.quality, checkpoint: c.checkpoint)
  }

  /// Lossless path: from the rewritten JPEG, decoded once.
  static func runFromOutput(_ c: inout PipelineContext) throws(PipelineError) {
    guard !c.profiles.isEmpty, c.renditions.isEmpty, let output = c.output else { return }
    c.renditions = try fromStored(
      output, profiles: c.profiles, quality: c.configuration.quality, budget: c.configuration.memoryBudget,
      checkpoint: c.checkpoint)
  }

  /// Renditions of a stored output JPEG (the default image) for `profiles`.
  static func fromStored(
    _ jpeg: [UInt8], profiles: [ModelProfile], quality: Int, budget: MemoryBudget, checkpoint: Checkpoint
  ) throws(PipelineError) -> [ProfileRendition] {
    let info: JPEGInfo
    do { info = try JPEGCodec.readHeader(jpeg) } catch {
      throw PipelineError(error, while: "reading the stored image")
    }
    // Sizes from the stored image's own size, not the (DCT-scaled) decoded one.
    let targets = targets(profiles, width: info.width, height: info.height)
    guard !targets.isEmpty else { return [] }
    // Shrink on load to the smallest DCT scale that still covers the largest target.
    let largest = (
      width: targets.map(\.size.width).max() ?? info.width,
      height: targets.map(\.size.height).max() ?? info.height
    )
    let decoded = JPEGCodec.scaledSize(width: info.width, height: info.height, toAtLeast: largest)
    let reservation = try budget.reserve(decoded.width * decoded.height * 3 * 2)
    defer { reservation.release() }
    try checkpoint.check()
    let pixels: PixelBuffer
    do { pixels = try JPEGCodec.decode(jpeg, scaleToAtLeast: largest) } catch {
      throw PipelineError(error, while: "decoding the stored image")
    }
    let subsampling: JPEGCodec.EncodeSubsampling = info.subsampling == .s444 ? .s444 : .s420
    return try make(targets, from: pixels, subsampling: subsampling, quality: quality, checkpoint: checkpoint)
  }

  /// Each profile's size for a stored image of `width` × `height`, once per profile, leaving
  /// out profiles of that very size (the stored image is theirs).
  static func targets(_ profiles: [ModelProfile], width: Int, height: Int) -> [Target] {
    var targets: [Target] = []
    for profile in profiles where !targets.contains(where: { $0.profile == profile }) {
      let size = profile.size(ofStored: width, height)
      if size != (width, height) { targets.append(Target(profile: profile, size: size)) }
    }
    return targets
  }

  /// One rendition to make.
  struct Target {
    var profile: ModelProfile
    var size: (width: Int, height: Int)
  }

  /// Each target's rendition of `pixels` (upright, sRGB).
  static func make(
    _ targets: [Target], from pixels: PixelBuffer, subsampling: JPEGCodec.EncodeSubsampling, quality: Int,
    checkpoint: Checkpoint
  ) throws(PipelineError) -> [ProfileRendition] {
    var renditions: [ProfileRendition] = []
    for target in targets {
      let (profile, size) = (target.profile, target.size)
      try checkpoint.check()
      let resized = try Resampler.resize(
        pixels, width: size.width, height: size.height, checkpoint: checkpoint)
      let jpeg: [UInt8]
      do { jpeg = try JPEGCodec.encode(resized, quality: quality, subsampling: subsampling) } catch {
        throw PipelineError(error, while: "encoding a rendition")
      }
      do { try JPEGOutputVerifier.verify(jpeg) } catch {
        throw .internal("a rendition failed verification", detail: "\(error)")
      }
      renditions.append(
        ProfileRendition(profile: profile, jpeg: jpeg, width: size.width, height: size.height))
    }
    return renditions
  }
}
