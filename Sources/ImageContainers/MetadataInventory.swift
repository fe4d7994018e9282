/// Which kinds of metadata a file carries. The output JPEG keeps none of them.
public struct MetadataInventory: Sendable, Equatable {
  public var exif = false
  public var gps = false
  public var xmp = false
  public var iptc = false
  public var iccProfile = false
  public var comment = false
  public var thumbnail = false
  /// A JPEG MPF index (a second image, such as a gain map or a depth map, after the first).
  public var mpf = false
  /// PNG text chunks, HEIF non-primary items and other kinds not listed above.
  public var text = false
  public var auxiliaryImages = false
  public var personalNames = false
  public var otherSegments = false

  public init() {}

  /// The names of the kinds found, in a stable order (as `inspect` prints them).
  public var names: [String] {
    let all: [(Bool, String)] = [
      (exif, "exif"), (gps, "gps"), (xmp, "xmp"), (iptc, "iptc"), (iccProfile, "icc"),
      (comment, "comment"), (thumbnail, "thumbnail"), (mpf, "mpf"), (text, "text"),
      (auxiliaryImages, "auxiliary-images"), (personalNames, "artist-copyright"),
      (otherSegments, "other"),
    ]
    return all.filter(\.0).map(\.1)
  }

  package mutating func absorb(_ exifInfo: EXIFInfo?) {
    guard let exifInfo else { return }
    exif = true
    gps = gps || exifInfo.hasGPS
    thumbnail = thumbnail || exifInfo.hasThumbnail
    personalNames = personalNames || exifInfo.hasPersonalNames
  }
}
