/// The bytes a decode will hold at its peak, estimated from the header before decoding.
///
/// Deliberately generous: decoded pixels at the size they are decoded to, the codec's own
/// working buffers, and the resized and rotated copies that follow.
enum MemoryEstimate {
  static func bytes(
    for header: ImageHeader, decodeSize: (width: Int, height: Int), output: (width: Int, height: Int),
    heifAppliesTransforms: Bool
  ) -> Int {
    let decoded = decodeSize.width * decodeSize.height
    let stored = header.width * header.height
    let outputBytes = output.width * output.height * 3 * 3  // resized, oriented, encoded
    switch header.container {
    case .jpeg(let info):
      // Progressive files keep every DCT coefficient of the full-size image (2 bytes each).
      let coefficients = info.isProgressive ? stored * max(1, info.components) * 2 : 0
      return decoded * 4 + coefficients + outputBytes
    case .heif(let info):
      // libheif: YCbCr planes (at most 2 samples a pixel for 4:2:2, 16-bit above 8 bits) plus
      // interleaved RGBA, plus one more copy when it rotates or mirrors the image itself.
      let deep = (info.bitDepth ?? 8) > 8 ? 2 : 1
      let transformCopy = heifAppliesTransforms && info.hasRotationOrMirror ? stored * 4 : 0
      return stored * (2 * deep + 4) + transformCopy + outputBytes
    case .png(let info):
      return stored * 4 * (info.bitDepth > 8 ? 2 : 1) + stored * 3 + outputBytes
    case .webp, .gif:
      return stored * 4 + stored * 3 + outputBytes
    }
  }
}
