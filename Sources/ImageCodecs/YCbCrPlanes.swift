/// Decoded Y′, Cb and Cr planes, each an 8-bit gray buffer, and how to read them: the matrix,
/// the range and where the chroma samples sit. JPEG (JFIF) gives BT.601 full range, centred;
/// an HEVC stream says what it is in its VUI or the HEIF `colr` box.
///
/// Photos are stored as YCbCr with half-resolution chroma, and the output is 4:2:0 again; so
/// the pipeline decodes to planes, resizes the luma to the output size and each chroma plane
/// straight to the output's 4:2:0 chroma size, and only then makes RGB (`MergePlanesStep`).
/// That skips upsampling and colour-converting the large decoded image (TurboJPEG's scaled RGB
/// decode does both with slow generic code) and resamples 1.5 samples per pixel instead of 3.
/// Resampling commutes with the linear YCbCr↔RGB matrix, so the result matches the RGB path
/// up to rounding.
public struct YCbCrPlanes: Sendable {
  /// Full-resolution luma; its `width` × `height` is the image size (rows may be padded).
  public var luma: PixelBuffer
  /// Blue-difference chroma, at the stored subsampling.
  public var cb: PixelBuffer
  /// Red-difference chroma, at the stored subsampling.
  public var cr: PixelBuffer
  /// Luma samples per chroma sample across and down (1, 2 or 4): chroma sample `i` covers luma
  /// `i × factor ..< (i + 1) × factor`; on an odd side the last one hangs over the edge.
  public var subsampling: (horizontal: Int, vertical: Int)
  /// How Y′CbCr encodes R′G′B′.
  public var matrix: YCbCrMatrix
  /// Full or video (limited) range samples.
  public var range: YCbCrRange
  /// Where each chroma sample sits among the luma samples it covers.
  public var siting: ChromaSiting

  /// Planes with their reading; the defaults are JFIF's (BT.601, full range, centred chroma).
  public init(
    luma: PixelBuffer, cb: PixelBuffer, cr: PixelBuffer, subsampling: (horizontal: Int, vertical: Int),
    matrix: YCbCrMatrix = .bt601, range: YCbCrRange = .full, siting: ChromaSiting = .centred
  ) {
    precondition(luma.layout == .gray && cb.layout == .gray && cr.layout == .gray, "planes are gray")
    precondition((cb.width, cb.height) == (cr.width, cr.height), "chroma planes differ in size")
    precondition(
      cb.width * subsampling.horizontal >= luma.width && cb.height * subsampling.vertical >= luma.height,
      "chroma planes do not cover the luma")
    self.luma = luma
    self.cb = cb
    self.cr = cr
    self.subsampling = subsampling
    self.matrix = matrix
    self.range = range
    self.siting = siting
  }

  /// Whether these are JFIF planes (BT.601 full range, centred chroma), which TurboJPEG's
  /// own YCbCr → RGB conversion reads correctly.
  public var isJFIF: Bool { matrix == .bt601 && range == .full && siting == .centred }

  /// How many chroma samples the image's width and height span: the luma size over the
  /// subsampling, which is less than the chroma plane's size on an odd side. Resampling maps
  /// this extent, not the sample count, so chroma stays registered with the luma.
  public var chromaExtent: (width: Double, height: Double) {
    (Double(width) / Double(subsampling.horizontal), Double(height) / Double(subsampling.vertical))
  }

  /// Image width in pixels.
  public var width: Int { luma.width }
  /// Image height in pixels.
  public var height: Int { luma.height }

  /// The chroma plane size the pipeline resizes to for a `width` × `height` output: each even
  /// side halved (4:2:0 where it can be), each odd side kept whole. An odd side cannot be
  /// halved exactly: its last chroma sample would hang over the edge, and a mirror or a half
  /// turn would then shift the chroma by a pixel against the luma.
  public static func chromaSize(width: Int, height: Int) -> (width: Int, height: Int) {
    let factors = subsampling(width: width, height: height)
    return (width / factors.horizontal, height / factors.vertical)
  }

  /// The subsampling `chromaSize` gives: 2 on each even side, 1 on each odd one.
  public static func subsampling(width: Int, height: Int) -> (horizontal: Int, vertical: Int) {
    (width % 2 == 0 ? 2 : 1, height % 2 == 0 ? 2 : 1)
  }
}
