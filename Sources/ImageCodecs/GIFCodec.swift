private import CGIF

/// What a GIF's logical screen descriptor says.
public struct GIFInfo: Sendable, Equatable {
  /// Logical screen (canvas) width.
  public var width: Int
  /// Logical screen (canvas) height.
  public var height: Int
}

/// GIF decoding of the first frame only, through giflib's record-level API from memory.
public enum GIFCodec {
  static let codec = "gif"

  /// Reads the logical screen size.
  public static func readHeader(_ data: [UInt8]) throws -> GIFInfo {
    try data.withUnsafeBytes { try readHeader($0) }
  }

  /// Reads the header of bytes read in place.
  public static func readHeader(_ data: UnsafeRawBufferPointer) throws -> GIFInfo {
    try withGIF(data) { gif in
      GIFInfo(width: Int(gif.pointee.SWidth), height: Int(gif.pointee.SHeight))
    }
  }

  /// Decodes the first frame onto a transparent canvas of the logical screen size, with its
  /// palette and the Graphic Control Extension's transparent index. Reads records only up to the
  /// first image (never the rest of an animation). A frame outside the logical screen, a canvas
  /// over `maxPixels`, or a file that ends inside the image data fails.
  /// The result is RGBA when anything is transparent, RGB otherwise.
  public static func decode(_ data: [UInt8], maxPixels: Int = 250_000_000) throws -> PixelBuffer {
    try data.withUnsafeBytes { try decode($0, maxPixels: maxPixels) }
  }

  /// Decodes bytes read in place (see the `[UInt8]` variant).
  public static func decode(_ data: UnsafeRawBufferPointer, maxPixels: Int = 250_000_000) throws
    -> PixelBuffer
  {
    try withGIF(data) { gif in
      let (width, height) = (Int(gif.pointee.SWidth), Int(gif.pointee.SHeight))
      guard width > 0, height > 0 else { throw CodecError(.corrupt, codec: codec, "empty logical screen") }
      guard width * height <= maxPixels else {
        throw CodecError(.tooLarge, codec: codec, "logical screen \(width)x\(height)")
      }
      var transparentIndex: Int? = nil
      while true {
        var record = UNDEFINED_RECORD_TYPE
        try check(DGifGetRecordType(gif, &record), gif)
        switch record {
        case EXTENSION_RECORD_TYPE:
          transparentIndex = try readExtension(gif) ?? transparentIndex
        case IMAGE_DESC_RECORD_TYPE:
          try check(DGifGetImageDesc(gif), gif)
          return try readFrame(gif, width: width, height: height, transparentIndex: transparentIndex)
        case TERMINATE_RECORD_TYPE:
          throw CodecError(.corrupt, codec: codec, "no image before the trailer")
        default:
          throw CodecError(.corrupt, codec: codec, "unknown record type")
        }
      }
    }
  }

  /// Reads one extension and its sub-blocks; returns the transparent index of a GCB that has one.
  private static func readExtension(_ gif: UnsafeMutablePointer<GifFileType>) throws -> Int?? {
    var code: Int32 = 0
    var block: UnsafeMutablePointer<GifByteType>? = nil
    try check(DGifGetExtension(gif, &code, &block), gif)
    var result: Int?? = nil
    // GCB: length 4, packed flags (bit 0: transparency), delay (2 bytes), transparent index.
    if code == GRAPHICS_EXT_FUNC_CODE, let block, block[0] >= 4 {
      result = .some(block[1] & 1 != 0 ? Int(block[4]) : nil)
    }
    while block != nil {
      try check(DGifGetExtensionNext(gif, &block), gif)
    }
    return result
  }

  private static func readFrame(
    _ gif: UnsafeMutablePointer<GifFileType>, width: Int, height: Int, transparentIndex: Int?
  ) throws -> PixelBuffer {
    let image = gif.pointee.Image
    let (left, top, frameWidth, frameHeight) = (
      Int(image.Left), Int(image.Top), Int(image.Width), Int(image.Height)
    )
    // Refuse frames outside the logical screen (the 44-byte "decompression bomb" declares a
    // 65535×1321 frame at y = 65280 on a 32×32 screen).
    guard frameWidth > 0, frameHeight > 0, left + frameWidth <= width, top + frameHeight <= height else {
      throw CodecError(
        .corrupt, codec: codec, "frame \(frameWidth)x\(frameHeight)+\(left)+\(top) outside \(width)x\(height)"
      )
    }
    guard let map = image.ColorMap ?? gif.pointee.SColorMap, let colours = map.pointee.Colors else {
      throw CodecError(.corrupt, codec: codec, "no colour map")
    }
    let colourCount = Int(map.pointee.ColorCount)
    let coversCanvas = left == 0 && top == 0 && frameWidth == width && frameHeight == height
    let layout: PixelBuffer.Layout = transparentIndex == nil && coversCanvas ? .rgb : .rgba
    let channels = layout.channels
    _ = try OutputSize.rowBytes(width: width, height: height, channels: channels, codec: codec)
    var canvas = PixelBuffer(width: width, height: height, layout: layout)  // transparent black
    var line = [GifPixelType](repeating: 0, count: frameWidth)
    // Interlaced frames deliver rows in four passes: every 8th from 0, 8th from 4, 4th from 2, 2nd from 1.
    let order: [Int] =
      image.Interlace
      ? [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap { start, step in
        Array(stride(from: start, to: frameHeight, by: step))
      }
      : Array(0..<frameHeight)
    try canvas.bytes.withUnsafeMutableBufferPointer { out in
      for row in order {
        try check(
          line.withUnsafeMutableBufferPointer { DGifGetLine(gif, $0.baseAddress, Int32(frameWidth)) }, gif)
        var o = (top + row) * width * channels + left * channels
        for index in line {
          let i = Int(index)
          if i != transparentIndex, i < colourCount {
            let colour = colours[i]
            out[o] = colour.Red
            out[o + 1] = colour.Green
            out[o + 2] = colour.Blue
            if channels == 4 { out[o + 3] = 255 }
          }
          o += channels
        }
      }
    }
    return canvas
  }

  /// Opens `data` with a memory reader and hands the open GifFileType to `body`; closes it after.
  private static func withGIF<T>(
    _ data: UnsafeRawBufferPointer, _ body: (UnsafeMutablePointer<GifFileType>) throws -> T
  )
    throws -> T
  {
    try data.withUnsafeBufferPointer { buffer in
      let source = MemorySource(buffer)
      var error: Int32 = 0
      guard let gif = DGifOpen(Unmanaged.passUnretained(source).toOpaque(), readFromMemory, &error) else {
        throw failure(error)
      }
      let file = GIFFile(gif)
      // Both must outlive every giflib call in body, which sees only the raw pointer.
      return try withExtendedLifetime((source, file)) { try body(file.raw) }
    }
  }

  private static func check(_ status: Int32, _ gif: UnsafeMutablePointer<GifFileType>) throws {
    if status != GIF_OK { throw failure(gif.pointee.Error) }
  }

  /// Maps giflib's error code (not its message) to a kind.
  private static func failure(_ code: Int32) -> CodecError {
    let kind: CodecError.Kind =
      switch code {
      case D_GIF_ERR_READ_FAILED, D_GIF_ERR_EOF_TOO_SOON: .truncated
      case D_GIF_ERR_NOT_ENOUGH_MEM: .internal
      default: .corrupt
      }
    let message = GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
    return CodecError(kind, codec: codec, message)
  }
}

/// The bytes giflib reads through `readFromMemory`, and how far it has read.
private final class MemorySource {
  let buffer: UnsafeBufferPointer<UInt8>
  var offset = 0
  init(_ buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }
}

/// giflib's InputFunc: copies up to `count` bytes from the MemorySource in UserData.
private func readFromMemory(
  _ gif: UnsafeMutablePointer<GifFileType>?, _ out: UnsafeMutablePointer<GifByteType>?, _ count: Int32
) -> Int32 {
  guard let gif, let out, count > 0, let user = gif.pointee.UserData else { return 0 }
  let source = Unmanaged<MemorySource>.fromOpaque(user).takeUnretainedValue()
  let n = min(Int(count), source.buffer.count - source.offset)
  guard n > 0, let base = source.buffer.baseAddress else { return 0 }
  out.update(from: base + source.offset, count: n)
  source.offset += n
  return Int32(n)
}

/// Owns one open GifFileType; `deinit` closes it.
private final class GIFFile {
  let raw: UnsafeMutablePointer<GifFileType>
  init(_ raw: UnsafeMutablePointer<GifFileType>) { self.raw = raw }
  deinit {
    var error: Int32 = 0
    DGifCloseFile(raw, &error)
  }
}
