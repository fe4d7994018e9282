private import CZlib

/// zlib decompression with a hard cap on the output, for compressed metadata (PNG iCCP/zTXt).
public enum Inflate {
  /// Inflates a zlib stream (RFC 1950). Throws `.tooLarge` as soon as the output would exceed
  /// `maxOutput`, `.truncated` when the stream ends early, `.corrupt` on bad data.
  public static func decompress(_ bytes: ArraySlice<UInt8>, maxOutput: Int) throws -> [UInt8] {
    var stream = z_stream()
    guard CZlib_inflateInit2(&stream, 15) == Z_OK else {
      throw CodecError(.internal, codec: "zlib", "inflateInit2 failed")
    }
    defer { inflateEnd(&stream) }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: min(max(maxOutput, 1) + 1, 64 * 1024))
    return try bytes.withUnsafeBufferPointer { input in
      stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
      stream.avail_in = UInt32(clamping: input.count)
      while true {
        let status = chunk.withUnsafeMutableBufferPointer { out in
          stream.next_out = out.baseAddress
          stream.avail_out = UInt32(out.count)
          return inflate(&stream, Z_NO_FLUSH)
        }
        let produced = chunk.count - Int(stream.avail_out)
        if output.count + produced > maxOutput {
          throw CodecError(.tooLarge, codec: "zlib", "inflated output exceeds \(maxOutput) bytes")
        }
        output.append(contentsOf: chunk[0..<produced])
        switch status {
        case Z_STREAM_END:
          return output
        case Z_OK:
          continue
        case Z_BUF_ERROR where stream.avail_in == 0:
          throw CodecError(.truncated, codec: "zlib", "stream ends early")
        default:
          let message = stream.msg.map { String(cString: $0) } ?? "inflate status \(status)"
          throw CodecError(.corrupt, codec: "zlib", message)
        }
      }
    }
  }

  /// Inflates a whole zlib stream held in an array.
  public static func decompress(_ bytes: [UInt8], maxOutput: Int) throws -> [UInt8] {
    try decompress(bytes[...], maxOutput: maxOutput)
  }
}
