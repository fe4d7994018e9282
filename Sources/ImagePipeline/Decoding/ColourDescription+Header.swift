import ImageCodecs

extension ColourDescription {
  /// What a file's headers declare about its colour, before any pixel is decoded: an ICC profile
  /// (JPEG APP2, WebP ICCP, HEIF `colr` prof/rICC, PNG iCCP inflated here with a hard cap), else
  /// a HEIF nclx box, else nothing. Decoders may learn more (libheif reads the coded stream's
  /// VUI) and report it with what they decode.
  static func declared(by header: ImageHeader) -> ColourDescription {
    if let profile = header.iccProfile { return .icc(profile) }
    switch header.container {
    case .png(let png):
      // iCCP is zlib-compressed; a profile is rarely over 1 MiB. One that does not inflate is
      // ignored, as browsers ignore it.
      if let compressed = png.compressedICCProfile,
        let profile = try? Inflate.decompress(compressed[...], maxOutput: 4 << 20)
      {
        return .icc(profile)
      }
    case .heif(let heif):
      if let nclx = heif.nclx {
        return .nclx(
          NCLXColour(
            colourPrimaries: nclx.primaries, transferCharacteristics: nclx.transfer,
            matrixCoefficients: nclx.matrix, fullRange: nclx.fullRange))
      }
    case .jpeg, .webp, .gif: break
    }
    return .untagged
  }
}
