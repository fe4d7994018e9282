/// The iPhone 15/16 (iOS 18) work-around for libheif 1.15 (issue 3, finding 1).
///
/// libheif ≥ 1.18 accepts `iref` entries of type `auxl` and `cdsc` that point at more than one
/// item (iOS 18 gain maps point at both the primary image and the `tmap` item); 1.15 refuses
/// the whole file with "Too many auxiliary image references". Renaming exactly those entries'
/// four-character type to one libheif does not interpret keeps every size and offset, so the
/// primary image and its own single-target references decode as before.
public enum HEIFReferencePatch {
  /// The type written over the multi-target entries: not a reference type libheif 1.15 reads.
  public static let neutralType = FourCC("xref")

  /// A copy of `bytes` with each listed entry's type renamed, or nil when nothing needs it.
  public static func apply(to bytes: [UInt8], info: HEIFBoxInfo) -> [UInt8]? {
    guard !info.multiTargetReferenceOffsets.isEmpty else { return nil }
    var copy = bytes
    let replacement = neutralType.bytes
    for offset in info.multiTargetReferenceOffsets where offset >= 0 && offset + 4 <= copy.count {
      copy.replaceSubrange(offset..<(offset + 4), with: replacement)
    }
    return copy
  }
}
