/// How a track's coded picture is turned to be shown, from the display matrix in `tkhd`, as one
/// of the eight EXIF orientations (the raw value is the EXIF value, so the still pipeline's
/// orientation step applies it unchanged).
///
/// QuickTime's matrix maps a coded point to a display point: x' = a·x + c·y + tx,
/// y' = b·x + d·y + ty. Only the signs and positions of a, b, c, d matter; the translation only
/// moves the turned picture back into view. iPhones write exact quarter turns; a matrix that is
/// not one (a skew, an arbitrary angle, a scale) is read as the nearest quarter turn with its
/// mirror, as FFmpeg's `av_display_rotation_get` rounds, because pixels are only ever turned by
/// quarter turns here.
public enum MovieOrientation: Int, Sendable, Equatable, CaseIterable {
  case up = 1
  case upMirrored = 2
  case down = 3
  case downMirrored = 4
  case leftMirrored = 5
  /// Turn 90° clockwise to show (an iPhone's portrait video: a = 0, b = 1, c = -1, d = 0).
  case right = 6
  case rightMirrored = 7
  case left = 8

  /// Whether showing the picture swaps its width and height.
  public var swapsDimensions: Bool { rawValue >= 5 }

  /// The orientation of the matrix [a b; c d] (16.16 fixed point or any common scale).
  public init(a: Int32, b: Int32, c: Int32, d: Int32) {
    // The larger diagonal or the larger anti-diagonal decides whether the axes swap.
    let straight = max(abs(Int64(a)), abs(Int64(d))) >= max(abs(Int64(b)), abs(Int64(c)))
    if straight {
      switch (a >= 0, d >= 0) {
      case (true, true): self = .up
      case (false, true): self = .upMirrored
      case (false, false): self = .down
      case (true, false): self = .downMirrored
      }
    } else {
      switch (b >= 0, c >= 0) {
      case (true, false): self = .right
      case (false, true): self = .left
      case (true, true): self = .leftMirrored
      case (false, false): self = .rightMirrored
      }
    }
  }
}
