/// Checks the size of a decoded buffer before anything is allocated.
enum OutputSize {
  /// The largest decoded buffer any codec here allocates (2 GiB). Far above the pipeline's pixel
  /// limit (250 MP × 4 bytes ≈ 1 GB); it only keeps a crafted header from asking malloc for
  /// petabytes (Swift traps when an allocation fails).
  static let maxBytes = 1 << 31

  /// Bytes per row for `width` pixels of `channels` bytes; throws `.tooLarge` when the whole
  /// buffer would overflow or exceed `maxBytes`.
  static func rowBytes(width: Int, height: Int, channels: Int, codec: String) throws -> Int {
    let (rowBytes, overflow) = width.multipliedReportingOverflow(by: channels)
    guard width > 0, height > 0, !overflow, height <= maxBytes / rowBytes else {
      throw CodecError(.tooLarge, codec: codec, "\(width)x\(height)x\(channels) exceeds \(maxBytes) bytes")
    }
    return rowBytes
  }
}
