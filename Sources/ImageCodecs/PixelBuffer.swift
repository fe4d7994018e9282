/// Interleaved 8-bit pixels, row-major, no padding between rows unless `rowBytes` says so.
/// The one pixel type that crosses from the C decoders into the Swift pipeline steps.
public struct PixelBuffer: Sendable {
  public enum Layout: Int, Sendable {
    case gray = 1
    case rgb = 3
    case rgba = 4
    public var channels: Int { rawValue }
  }

  public var width: Int
  public var height: Int
  public var layout: Layout
  /// Bytes from one row to the next (≥ width × channels).
  public var rowBytes: Int
  public var bytes: [UInt8]
  /// Whether RGBA colour is premultiplied by alpha.
  public var premultiplied: Bool

  public init(
    width: Int, height: Int, layout: Layout, rowBytes: Int? = nil, bytes: [UInt8], premultiplied: Bool = false
  ) {
    self.width = width
    self.height = height
    self.layout = layout
    self.rowBytes = rowBytes ?? width * layout.channels
    self.bytes = bytes
    self.premultiplied = premultiplied
    precondition(
      self.bytes.count >= self.rowBytes * height,
      "PixelBuffer: \(self.bytes.count) bytes for \(width)x\(height)")
  }

  /// A zero-filled buffer.
  public init(width: Int, height: Int, layout: Layout) {
    self.init(
      width: width, height: height, layout: layout,
      bytes: [UInt8](repeating: 0, count: width * height * layout.channels))
  }
}
