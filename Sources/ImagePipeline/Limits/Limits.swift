/// Size limits checked from headers before any pixel is decoded.
public struct Limits: Sendable, Equatable {
  /// Largest upload in bytes.
  public var maxInputBytes = 64 << 20
  /// Largest stored width and height (each).
  public var maxDimension = 65_535
  /// Largest stored pixel count: the 200 MP phone photos pass, the corpus bombs (268–289 MP) don't.
  public var maxPixels = 250_000_000
  /// Most items in a HEIF file (images, tiles, metadata, thumbnails).
  public var maxHEIFItems = 4096
  /// Most tiles in a HEIF grid image (a 200 MP photo in 512-px tiles has under 800).
  public var maxHEIFTiles = 2048
  /// Most bytes in PNG text chunks (tEXt/zTXt/iTXt, counted compressed; they are never inflated).
  public var maxPNGTextBytes = 1 << 20

  public init() {}

  /// Nil when every limit is positive, else what is wrong.
  public func validate() -> String? {
    let all = [
      ("maxInputBytes", maxInputBytes), ("maxDimension", maxDimension), ("maxPixels", maxPixels),
      ("maxHEIFItems", maxHEIFItems), ("maxHEIFTiles", maxHEIFTiles), ("maxPNGTextBytes", maxPNGTextBytes),
    ]
    for (name, value) in all where value <= 0 { return "\(name) must be positive (is \(value))" }
    return nil
  }
}
