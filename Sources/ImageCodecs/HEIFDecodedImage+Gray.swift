private import CHeif
private import DelayLoadHeif

extension HEIFDecodedImage {
  /// A monochrome image (decoded as `heif_chroma_monochrome`) as 8-bit full-range gray, or RGBA
  /// (gray in each colour channel) when it has alpha. The Y plane arrives as coded, 8 to 16 bits
  /// deep; in video range (the image's nclx `full_range_flag` 0, the default of HEVC and AV1
  /// streams) 16…235 (scaled to the depth) becomes 0…255, else 0…2^depth − 1 does. Alpha is
  /// taken as full range, as libheif takes it.
  func gray(premultiplied: Bool) throws -> PixelBuffer {
    let luma = try samples(heif_channel_Y, videoRange: !isFullRange)
    guard heif_image_has_channel(raw, heif_channel_Alpha) != 0 else {
      return PixelBuffer(width: luma.width, height: luma.height, layout: .gray, bytes: luma.bytes)
    }
    let alpha = try samples(heif_channel_Alpha, videoRange: false)
    guard (alpha.width, alpha.height) == (luma.width, luma.height) else {
      throw CodecError(.internal, codec: HEIFCodec.codec, "alpha plane of another size than the gray plane")
    }
    let count = luma.width * luma.height
    let bytes = [UInt8](unsafeUninitializedCapacity: count * 4) { out, initialized in
      for i in 0..<count {
        let v = luma.bytes[i]
        (out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]) = (v, v, v, alpha.bytes[i])
      }
      initialized = count * 4
    }
    return PixelBuffer(
      width: luma.width, height: luma.height, layout: .rgba, bytes: bytes, premultiplied: premultiplied)
  }

  /// Whether the decoded image's nclx says full range (libheif gives it the stream's, else the
  /// `colr` box's); without one, video range, the streams' default.
  private var isFullRange: Bool {
    var nclx: UnsafeMutablePointer<heif_color_profile_nclx>? = nil
    guard heif_image_get_nclx_color_profile(raw, &nclx).code == heif_error_Ok, let nclx else { return false }
    defer { heif_nclx_color_profile_free(nclx) }
    return nclx.pointee.full_range_flag != 0
  }

  /// One plane scaled to full-range 8-bit samples, tightly packed, through a table of every value.
  private func samples(_ channel: heif_channel, videoRange: Bool) throws -> (
    width: Int, height: Int, bytes: [UInt8]
  ) {
    let width = Int(heif_image_get_width(raw, channel))
    let height = Int(heif_image_get_height(raw, channel))
    let depth = Int(heif_image_get_bits_per_pixel_range(raw, channel))
    var stride: Int32 = 0
    guard width > 0, height > 0, (1...16).contains(depth),
      let plane = heif_image_get_plane_readonly(raw, channel, &stride)
    else {
      throw CodecError(
        .internal, codec: HEIFCodec.codec, "unexpected gray plane \(width)x\(height) \(depth)-bit")
    }
    let table = Self.fullRangeTable(depth: depth, videoRange: videoRange)
    let mask = (1 << depth) - 1
    let bytes = [UInt8](unsafeUninitializedCapacity: width * height) { out, initialized in
      for y in 0..<height {
        let row = plane + y * Int(stride)
        if depth <= 8 {
          for x in 0..<width { out[y * width + x] = table[Int(row[x]) & mask] }
        } else {
          // Deeper samples are 16-bit words in native byte order.
          let words = UnsafeRawPointer(row).assumingMemoryBound(to: UInt16.self)
          for x in 0..<width { out[y * width + x] = table[Int(words[x]) & mask] }
        }
      }
      initialized = width * height
    }
    return (width, height, bytes)
  }

  /// 8-bit full-range values of every `depth`-bit sample: video range maps 16·2^(depth−8) …
  /// 235·2^(depth−8) to 0…255 (clamped outside), full range 0…2^depth − 1.
  static func fullRangeTable(depth: Int, videoRange: Bool) -> [UInt8] {
    let count = 1 << depth
    let (black, span) = videoRange ? (16 << (depth - 8), 219 << (depth - 8)) : (0, count - 1)
    return (0..<count).map { value in
      UInt8(clamping: ((value - black) * 255 + span / 2) / span)
    }
  }
}
