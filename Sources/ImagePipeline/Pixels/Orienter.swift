import ImageCodecs

/// Applies an EXIF orientation to pixels: the stored image in, the upright image out.
enum Orienter {
  /// The upright image for `image` stored with `orientation`; `.up` returns the input unchanged.
  /// The result has tight rows (`rowBytes == width × channels`) and keeps the premultiplied flag.
  static func apply(_ orientation: Orientation, to image: PixelBuffer) -> PixelBuffer {
    if orientation == .up { return image }
    switch image.layout {
    case .gray: return transform(image, orientation, pixel: UInt8.self)
    case .rgb: return transform(image, orientation, pixel: Pixel3.self)
    case .rgba: return transform(image, orientation, pixel: UInt32.self)
    }
  }

  // Side of the square tiles used by the transposing orientations (5…8): 64 × 64 pixels of
  // at most 4 bytes is 16 KiB of destination plus 64 source rows' worth of cache lines, which
  // keeps both sides in L1/L2 instead of striding through the whole source per output row.
  private static let tile = 64

  private static func transform<P: BitwiseCopyable>(
    _ image: PixelBuffer, _ orientation: Orientation, pixel: P.Type
  ) -> PixelBuffer {
    let size = MemoryLayout<P>.size
    precondition(size == image.layout.channels)
    let (width, height) = (image.width, image.height)
    let (outWidth, outHeight) = orientation.displaySize(width: width, height: height)
    let srcRowBytes = image.rowBytes
    let dstRowBytes = outWidth * size
    let count = dstRowBytes * outHeight
    // Whether destination x (or y) runs backwards along the source axis it reads.
    let (flipX, flipY): (Bool, Bool)
    switch orientation {
    case .up: (flipX, flipY) = (false, false)
    case .upMirrored: (flipX, flipY) = (true, false)
    case .down: (flipX, flipY) = (true, true)
    case .downMirrored: (flipX, flipY) = (false, true)
    case .leftMirrored: (flipX, flipY) = (false, false)
    case .right: (flipX, flipY) = (false, true)
    case .rightMirrored: (flipX, flipY) = (true, true)
    case .left: (flipX, flipY) = (true, false)
    }
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
      image.bytes.withUnsafeBytes { source in
        guard let src = source.baseAddress, let dst = UnsafeMutableRawPointer(out.baseAddress),
          count > 0
        else { return }
        if orientation.swapsDimensions {
          transpose(
            src: src, srcRowBytes: srcRowBytes, width: width, height: height,
            dst: dst, dstRowBytes: dstRowBytes, flipX: flipX, flipY: flipY, pixel: P.self)
        } else {
          for y in 0..<outHeight {
            let srcRow = src + (flipY ? height - 1 - y : y) * srcRowBytes
            let dstRow = dst + y * dstRowBytes
            if !flipX {
              dstRow.copyMemory(from: srcRow, byteCount: dstRowBytes)
              continue
            }
            var s = srcRow + (width - 1) * size
            for x in 0..<width {
              dstRow.storeBytes(of: s.loadUnaligned(as: P.self), toByteOffset: x * size, as: P.self)
              s -= size
            }
          }
        }
      }
      initialized = count
    }
    return PixelBuffer(
      width: outWidth, height: outHeight, layout: image.layout, rowBytes: dstRowBytes, bytes: bytes,
      premultiplied: image.premultiplied)
  }

  // Destination (x, y) reads source (flipX ? W-1-y : y, flipY ? H-1-x : x): each destination row
  // walks down one source column. Done tile by tile so that the source rows touched by one tile
  // stay in cache while the tile is written.
  private static func transpose<P: BitwiseCopyable>(
    src: UnsafeRawPointer, srcRowBytes: Int, width: Int, height: Int,
    dst: UnsafeMutableRawPointer, dstRowBytes: Int, flipX: Bool, flipY: Bool, pixel: P.Type
  ) {
    let size = MemoryLayout<P>.size
    let (outWidth, outHeight) = (height, width)
    let step = flipY ? -srcRowBytes : srcRowBytes
    for tileY in stride(from: 0, to: outHeight, by: tile) {
      let endY = min(tileY + tile, outHeight)
      for tileX in stride(from: 0, to: outWidth, by: tile) {
        let endX = min(tileX + tile, outWidth)
        let firstSourceRow = flipY ? height - 1 - tileX : tileX
        for y in tileY..<endY {
          let sourceColumn = flipX ? width - 1 - y : y
          var s = src + firstSourceRow * srcRowBytes + sourceColumn * size
          var d = dst + y * dstRowBytes + tileX * size
          for _ in tileX..<endX {
            d.storeBytes(of: s.loadUnaligned(as: P.self), as: P.self)
            s += step
            d += size
          }
        }
      }
    }
  }
}

/// One RGB pixel, moved as a unit (3 bytes, alignment 1).
private struct Pixel3 {
  var r: UInt8
  var g: UInt8
  var b: UInt8
}
