/// How a decoded image becomes upright: one crop in stored coordinates, then one orientation.
/// Any order of `clap`, `irot` and `imir` reduces to this, which lets the pipeline crop and
/// resize the stored planes first and rotate only the small result.
public struct HEIFGeometry: Sendable, Equatable {
  /// The region of the decoded image to keep (stored coordinates).
  public var crop: (x: Int, y: Int, width: Int, height: Int)
  /// The EXIF orientation (1…8) that makes the cropped region upright.
  public var exifOrientation: Int
  /// The upright size.
  public var displaySize: HEIFSize

  var orientation: Orientation { Orientation(exifValue: exifOrientation) }

  public static func == (a: HEIFGeometry, b: HEIFGeometry) -> Bool {
    a.crop == b.crop && a.exifOrientation == b.exifOrientation && a.displaySize == b.displaySize
  }
}

extension HEIFDecodePlan {
  /// The geometry for a decoded image of `width` × `height` (pass the decoded frame's size, not
  /// only the header's: geometry comes from what was decoded). With `applyTransforms` false
  /// (the orientation policy chose EXIF) the whole image is kept as stored.
  public func geometry(width: Int, height: Int, applyTransforms: Bool = true) -> HEIFGeometry {
    var crop = (x: 0, y: 0, width: max(0, width), height: max(0, height))
    var orientation = Orientation.up
    guard applyTransforms else {
      return HEIFGeometry(
        crop: crop, exifOrientation: 1, displaySize: HEIFSize(width: crop.width, height: crop.height))
    }
    for transform in transforms {
      switch transform {
      case .rotateCCW(let degrees):
        orientation = orientation.followed(by: Orientation(heifRotationCCW: degrees, mirrorAxis: nil))
      case .mirrorVertical:
        orientation = orientation.followed(by: .downMirrored)
      case .mirrorHorizontal:
        orientation = orientation.followed(by: .upMirrored)
      case .cleanAperture(let clap):
        let shown = orientation.displaySize(width: crop.width, height: crop.height)
        guard let rect = clap.rectangle(width: shown.width, height: shown.height) else { continue }
        // The rectangle is in displayed coordinates: map both corners back into the crop.
        let a = orientation.storedPoint(x: rect.x, y: rect.y, width: crop.width, height: crop.height)
        let b = orientation.storedPoint(
          x: rect.x + rect.width - 1, y: rect.y + rect.height - 1, width: crop.width, height: crop.height)
        crop = (
          crop.x + min(a.x, b.x), crop.y + min(a.y, b.y), abs(a.x - b.x) + 1, abs(a.y - b.y) + 1
        )
      }
    }
    let size = orientation.displaySize(width: crop.width, height: crop.height)
    return HEIFGeometry(
      crop: crop, exifOrientation: orientation.rawValue,
      displaySize: HEIFSize(width: size.width, height: size.height))
  }
}

extension HEIFCleanAperture {
  /// The kept rectangle in an image of `width` × `height`, rounded and clamped as libheif 1.15
  /// does: centre = (size − 1)/2 + offset; the left edge truncated, the top edge rounded, the
  /// right and bottom edges rounded from them. Nil when it is empty or a denominator is zero.
  func rectangle(width: Int, height: Int) -> (x: Int, y: Int, width: Int, height: Int)? {
    guard widthD > 0, heightD > 0, horizontalOffsetD > 0, verticalOffsetD > 0, width > 0, height > 0 else {
      return nil
    }
    guard
      let (left, right) = Self.edges(
        size: width, n: widthN, d: widthD, offN: horizontalOffsetN, offD: horizontalOffsetD, roundFirst: false
      ),
      let (top, bottom) = Self.edges(
        size: height, n: heightN, d: heightD, offN: verticalOffsetN, offD: verticalOffsetD, roundFirst: true)
    else { return nil }
    return (left, top, right - left + 1, bottom - top + 1)
  }

  // Integer division truncates toward zero in Swift as in C, so these match libheif's Fraction.
  // Every product is checked: the fields are 32-bit, and a crafted box must not trap.
  private static func edges(size: Int, n: UInt32, d: UInt32, offN: Int32, offD: UInt32, roundFirst: Bool)
    -> (Int, Int)?
  {
    let n = Int64(n)
    let d = Int64(d)
    let offD = Int64(offD)
    // first = offset + (size − 1)/2 − (clean − 1)/2 over the common denominator 2·d·offD.
    guard let denominator = product(2, d, offD), let a = product(Int64(offN), 2, d),
      let b = product(Int64(size - 1), d, offD), let c = product(n - d, offD)
    else { return nil }
    let (ab, o1) = a.addingReportingOverflow(b)
    let (numerator, o2) = ab.subtractingReportingOverflow(c)
    guard !o1, !o2 else { return nil }
    let (rounded, o3) = numerator.addingReportingOverflow(denominator / 2)
    guard !o3 else { return nil }
    let first = roundFirst ? rounded / denominator : numerator / denominator
    guard let firstD = product(first, d) else { return nil }
    let (sum, o4) = (n - d + d / 2).addingReportingOverflow(firstD)
    guard !o4 else { return nil }
    let last = sum / d
    let low = max(0, first)
    let high = min(Int64(size - 1), last)
    guard low <= high else { return nil }
    return (Int(low), Int(high))
  }

  private static func product(_ values: Int64...) -> Int64? {
    var result: Int64 = 1
    for value in values {
      let (p, overflow) = result.multipliedReportingOverflow(by: value)
      if overflow { return nil }
      result = p
    }
    return result
  }
}

extension Orientation {
  /// The stored pixel shown at (`x`, `y`) of the displayed image, for a stored image of
  /// `width` × `height`.
  func storedPoint(x: Int, y: Int, width: Int, height: Int) -> (x: Int, y: Int) {
    switch self {
    case .up: return (x, y)
    case .upMirrored: return (width - 1 - x, y)
    case .down: return (width - 1 - x, height - 1 - y)
    case .downMirrored: return (x, height - 1 - y)
    case .leftMirrored: return (y, x)
    case .right: return (y, height - 1 - x)
    case .rightMirrored: return (width - 1 - y, height - 1 - x)
    case .left: return (width - 1 - y, x)
    }
  }
}
