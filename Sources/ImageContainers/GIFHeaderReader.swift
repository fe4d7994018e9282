/// What a GIF's blocks say: the logical screen, the first frame's extents and a bounded count.
public struct GIFBlockInfo: Sendable {
  public var width = 0
  public var height = 0
  /// Position and size of the first image descriptor.
  public var firstFrame: (left: Int, top: Int, width: Int, height: Int)?
  /// Frames seen before the walk stopped (at most `maxFramesCounted`).
  public var frameCount = 0
  public var hasTrailer = false
  public var hasComment = false
  public var hasApplicationData = false

  /// Whether the first frame lies inside the logical screen.
  public var firstFrameFitsScreen: Bool {
    guard let f = firstFrame else { return false }
    return f.left + f.width <= width && f.top + f.height <= height
  }
}

/// Walks GIF blocks without decoding LZW data; stops after `maxFramesCounted` frames.
public enum GIFHeaderReader {
  public enum Failure: Error, Equatable {
    case notGIF
    case truncated
  }

  public static let maxFramesCounted = 4096

  public static func read(_ bytes: [UInt8], maxFrames: Int = maxFramesCounted) throws(Failure) -> GIFBlockInfo
  {
    try bytes.withBytes { bytes throws(Failure) in try read(bytes, maxFrames: maxFrames) }
  }

  /// Reads the blocks of bytes read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer, maxFrames: Int = maxFramesCounted) throws(Failure)
    -> GIFBlockInfo
  {
    let r = ByteReader(bytes, littleEndian: true)
    guard r.matches(0, Array("GIF87a".utf8)) || r.matches(0, Array("GIF89a".utf8)) else { throw .notGIF }
    guard let w = r.u16(6), let h = r.u16(8), let flags = r.u8(10) else { throw .truncated }
    var info = GIFBlockInfo(width: Int(w), height: Int(h))
    var p = 13
    if flags & 0x80 != 0 { p += 3 << (Int(flags & 7) + 1) }
    while info.frameCount < maxFrames, let block = r.u8(p) {
      switch block {
      case 0x21:
        guard let label = r.u8(p + 1) else { return info }
        if label == 0xFE { info.hasComment = true }
        if label == 0xFF { info.hasApplicationData = true }
        guard let next = skipSubBlocks(r, from: p + 2) else { return info }
        p = next
      case 0x2C:
        guard let left = r.u16(p + 1), let top = r.u16(p + 3), let fw = r.u16(p + 5), let fh = r.u16(p + 7),
          let frameFlags = r.u8(p + 9)
        else { return info }
        if info.firstFrame == nil { info.firstFrame = (Int(left), Int(top), Int(fw), Int(fh)) }
        info.frameCount += 1
        p += 10
        if frameFlags & 0x80 != 0 { p += 3 << (Int(frameFlags & 7) + 1) }
        p += 1  // LZW minimum code size
        guard let next = skipSubBlocks(r, from: p) else { return info }
        p = next
      case 0x3B:
        info.hasTrailer = true
        return info
      default:
        return info
      }
    }
    return info
  }

  /// The offset after a run of data sub-blocks ending in a zero-length block, or nil when cut.
  private static func skipSubBlocks(_ r: ByteReader, from start: Int) -> Int? {
    var p = start
    while let n = r.u8(p) {
      if n == 0 { return p + 1 }
      p += 1 + Int(n)
    }
    return nil
  }
}
