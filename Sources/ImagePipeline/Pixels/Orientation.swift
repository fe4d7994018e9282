/// The eight EXIF orientations (TIFF tag 0x0112): how the stored pixels must be transformed to be
/// shown upright. Raw values are the EXIF values 1…8.
enum Orientation: Int, Sendable, CaseIterable, CustomStringConvertible {
  /// 1: stored upright.
  case up = 1
  /// 2: mirrored left-right.
  case upMirrored = 2
  /// 3: rotated 180°.
  case down = 3
  /// 4: mirrored top-bottom.
  case downMirrored = 4
  /// 5: transposed (mirrored about the main diagonal).
  case leftMirrored = 5
  /// 6: must be rotated 90° clockwise to be upright (the usual portrait phone photo).
  case right = 6
  /// 7: transversed (mirrored about the anti-diagonal).
  case rightMirrored = 7
  /// 8: must be rotated 90° counter-clockwise (270° clockwise) to be upright.
  case left = 8

  /// The orientation for an EXIF value; anything outside 1…8 counts as 1, as EXIF readers do.
  init(exifValue: Int) {
    self = Orientation(rawValue: exifValue) ?? .up
  }

  /// Whether applying this orientation swaps width and height.
  var swapsDimensions: Bool { rawValue >= 5 }

  /// The display size of a stored image of `width` × `height`.
  func displaySize(width: Int, height: Int) -> (width: Int, height: Int) {
    swapsDimensions ? (height, width) : (width, height)
  }

  var description: String { "orientation \(rawValue)" }

  // Each orientation as a signed permutation matrix M acting on centred coordinates:
  // source = M · destination. Applying A then B gives source = M_A · M_B · destination.
  private var matrix: (Int, Int, Int, Int) {
    switch self {
    case .up: (1, 0, 0, 1)
    case .upMirrored: (-1, 0, 0, 1)
    case .down: (-1, 0, 0, -1)
    case .downMirrored: (1, 0, 0, -1)
    case .leftMirrored: (0, 1, 1, 0)
    case .right: (0, 1, -1, 0)
    case .rightMirrored: (0, -1, -1, 0)
    case .left: (0, -1, 1, 0)
    }
  }

  /// The single orientation equal to applying `self` first and then `next`.
  func followed(by next: Orientation) -> Orientation {
    let (a, b, c, d) = matrix
    let (e, f, g, h) = next.matrix
    let product = (a * e + b * g, a * f + b * h, c * e + d * g, c * f + d * h)
    for candidate in Orientation.allCases where candidate.matrix == product {
      return candidate
    }
    preconditionFailure("the eight orientations are closed under composition")
  }

  /// The orientation that undoes this one.
  var inverse: Orientation {
    switch self {
    case .right: .left
    case .left: .right
    default: self  // the mirrors, 180° and the two diagonal flips are their own inverse
    }
  }

  /// The orientation equal to HEIF's transformative properties: `irot` (`degreesCCW`, the box's
  /// 0…3 value × 90, as libheif reports it) applied first, then `imir` (`nil` when there is none),
  /// the order MIAF mandates and iPhones write.
  ///
  /// `imir` axis follows libheif (1.15 and later) and ISO/IEC 23008-12:2022: axis 0 exchanges
  /// top and bottom (EXIF 4), axis 1 exchanges left and right (EXIF 2). libheif 1.15 parses axis 0
  /// as `MirrorDirection::Vertical` and flips the rows for it (`mirror_inplace(false)`); the 2017
  /// edition's wording ("vertical axis", a left-right flip) reads the other way, but files and
  /// decoders follow libheif, so we do too.
  init(heifRotationCCW degreesCCW: Int, mirrorAxis: Int?) {
    let rotated: Orientation
    switch ((degreesCCW / 90) % 4 + 4) % 4 {
    case 1: rotated = .left  // 90° CCW
    case 2: rotated = .down
    case 3: rotated = .right  // 270° CCW = 90° CW
    default: rotated = .up
    }
    guard let axis = mirrorAxis else {
      self = rotated
      return
    }
    self = rotated.followed(by: axis & 1 == 0 ? .downMirrored : .upMirrored)
  }
}
