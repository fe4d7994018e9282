import ImageContainers

/// Work-arounds for Debian 12's libheif 1.15, applied to a copy of the bytes for the libheif path.
/// Each renames a four-character type in place, or rewrites a few bits: every size and offset
/// stays, so the primary image and its own references decode as before.
///
/// - iPhone 15/16 (iOS 18): libheif ≥ 1.18 accepts `iref` entries of type `auxl` and `cdsc` that
///   point at more than one item (iOS 18 gain maps point at both the primary image and the `tmap`
///   item); 1.15 refuses the whole file with "Too many auxiliary image references". Those
///   entries are renamed to `xref`, a type libheif does not interpret.
/// - Items without data: libheif 1.15 reads the data of every item while opening a file and
///   refuses it when one has no `iloc` entry ("Item with ID … has no compressed data"), which an
///   `iden` item never needs. Such an item, when the primary image does not use it, has its
///   `infe` box renamed to `free` (libheif then does not know the item), and the `iref` entries
///   pointing at it from items the primary does not use are renamed to `xref` (the primary's own
///   references stay whole).
/// - Layered AVIF: libheif 1.15 ignores `a1op` and `lsel`; the layers they select are written as
///   the AV1 stream's operating point 0 (see `AV1LayerSelection`).
public enum HEIFReferencePatch {
  /// The type written over the multi-target entries: not a reference type libheif 1.15 reads.
  public static let neutralType = FourCC("xref")
  /// The type written over an unused item's `infe` box.
  public static let hiddenItemType = FourCC("free")

  /// One four-character type to overwrite at `offset`.
  public struct Rename: Sendable, Equatable {
    public var offset: Int
    public var type: FourCC
  }

  /// A copy of `bytes` with each listed type renamed, or nil when nothing needs it.
  public static func apply(to bytes: [UInt8], info: HEIFBoxInfo) -> [UInt8]? {
    bytes.withUnsafeBytes { apply(to: $0, info: info) }
  }

  /// A patched copy of bytes read in place (the only copy of the input the HEIF path makes, and
  /// only for the files that need it), or nil when nothing needs it.
  public static func apply(to bytes: UnsafeRawBufferPointer, info: HEIFBoxInfo) -> [UInt8]? {
    let renames =
      info.multiTargetReferenceOffsets.map { Rename(offset: $0, type: neutralType) } + info.libheifRenames
    let writes = info.plan?.layerSelectionWrites ?? []
    guard !renames.isEmpty || !writes.isEmpty else { return nil }
    var copy = [UInt8](bytes)
    for rename in renames where rename.offset >= 0 && rename.offset + 4 <= copy.count {
      copy.replaceSubrange(rename.offset..<(rename.offset + 4), with: rename.type.bytes)
    }
    for write in writes where copy.indices.contains(write.offset) { copy[write.offset] = write.byte }
    return copy
  }

  /// The renames that hide items without data that the plan does not use.
  static func renames(for file: HEIFFile, plan: HEIFDecodePlan) -> [Rename] {
    guard let locations = file.locations else { return [] }
    var used: Set<UInt32> = [plan.primaryItemID, plan.image.itemID]
    for item in plan.image.codedItems { used.insert(item.itemID) }
    if let alpha = plan.alpha {
      used.insert(alpha.image.itemID)
      for item in alpha.image.codedItems { used.insert(item.itemID) }
    }
    // The derivation chain between the primary and its source.
    var id = plan.primaryItemID
    for _ in 0..<HEIFPlanReader.maxDerivationDepth {
      guard id != plan.image.itemID, let next = file.references(FourCC("dimg"), from: id).first else { break }
      used.insert(next)
      id = next
    }
    var hidden: Set<UInt32> = []
    var result: [Rename] = []
    for id in file.itemOrder where locations[id] == nil && !used.contains(id) {
      guard let item = file.items[id] else { continue }
      hidden.insert(id)
      for offset in item.infeOffsets { result.append(Rename(offset: offset + 4, type: hiddenItemType)) }
    }
    guard !hidden.isEmpty else { return [] }
    for ref in file.references where ref.to.contains(where: hidden.contains) && !used.contains(ref.from) {
      let renamedAlready = ref.to.count > 1 && (ref.type == FourCC("auxl") || ref.type == FourCC("cdsc"))
      if !renamedAlready { result.append(Rename(offset: ref.typeOffset, type: neutralType)) }
    }
    return result
  }
}
