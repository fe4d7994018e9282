import ImageContainers

/// One parse of a HEIF/AVIF file's `ftyp` and `meta` boxes: items, locations, references and
/// properties, as plain values. `HEIFBoxInfo` (the header facts) and `HEIFDecodePlan` (what the
/// decoder needs) are both built from it, so the bytes are read once.
///
/// Every count read from the file is bounded before it is used: by the bytes of its box (each
/// entry needs at least one byte), and by the limits passed in (items).
struct HEIFFile {
  typealias Box = HEIFBoxReader.Box
  typealias Failure = HEIFBoxReader.Failure

  struct Item {
    var type = FourCC(0, 0, 0, 0)
    var contentType = ""
    /// `infe` flags bit 0: not meant to be shown on its own (tiles, auxiliary images).
    var isHidden = false
    /// Offsets of the item's `infe` boxes (for the libheif patch): the first, which describes
    /// the item, and any later ones repeating its id.
    var infeOffsets: [Int] = []
  }

  struct Location {
    var constructionMethod = 0
    var dataReferenceIndex = 0
    var baseOffset: UInt64 = 0
    var extents: [(offset: UInt64, length: UInt64)] = []
  }

  struct Reference {
    let type: FourCC
    let typeOffset: Int
    let from: UInt32
    let to: [UInt32]
  }

  let reader: ByteReader
  var majorBrand = FourCC(0, 0, 0, 0)
  var compatibleBrands: [FourCC] = []
  var hasMovie = false
  var primaryItemID: UInt32?
  /// Items declared by `iinf` (its count field, or the entries when there are more).
  var declaredItemCount = 0
  var items: [UInt32: Item] = [:]
  /// Item ids in `iinf` order.
  var itemOrder: [UInt32] = []
  var references: [Reference] = []
  /// `iloc` entries; nil when the box is malformed (`locationFailure` says why).
  var locations: [UInt32: Location]? = [:]
  var locationFailure: String?
  var idat: Box?
  var properties = HEIFBoxReader.Properties()

  /// References by source item, in file order.
  private(set) var referencesFrom: [UInt32: [Int]] = [:]

  init(reader: ByteReader) {
    self.reader = reader
  }

  /// References of `type` from `item`, their targets in file order.
  func references(_ type: FourCC, from item: UInt32) -> [UInt32] {
    (referencesFrom[item] ?? []).flatMap { references[$0].type == type ? references[$0].to : [] }
  }

  /// Items with a reference of `type` pointing at `target`.
  func items(referencing target: UInt32, as type: FourCC) -> [UInt32] {
    var result: [UInt32] = []
    for ref in references where ref.type == type && ref.to.contains(target) && !result.contains(ref.from) {
      result.append(ref.from)
    }
    return result
  }

  mutating func indexReferences() {
    referencesFrom = [:]
    for (index, ref) in references.enumerated() { referencesFrom[ref.from, default: []].append(index) }
  }

  /// Whether `brand` is the major or a compatible brand.
  func hasBrand(_ brand: FourCC) -> Bool {
    majorBrand == brand || compatibleBrands.contains(brand)
  }

  // MARK: - Box parsers

  static func readItemInfo(_ r: ByteReader, _ iinf: Box, into file: inout HEIFFile, maxItems: Int)
    throws(Failure)
  {
    guard let version = r.u8(iinf.body) else { throw .badBox("iinf") }
    let countSize = version == 0 ? 2 : 4
    guard let declared = r.uint(iinf.body + 4, size: countSize) else { throw .badBox("iinf") }
    if declared > UInt64(maxItems) { throw .tooManyItems(Int(clamping: declared)) }
    let first = iinf.body + 4 + countSize
    let entries = try HEIFBoxReader.boxes(r, from: first, to: iinf.end, max: maxItems + 1)
    file.declaredItemCount = max(Int(declared), entries.count)
    if entries.count > maxItems { throw .tooManyItems(entries.count) }
    for infe in entries where infe.type == FourCC("infe") {
      guard let v = r.u8(infe.body), v >= 2, let flags = r.u24(infe.body + 1) else { continue }
      let idSize = v == 2 ? 2 : 4
      let p = infe.body + 4
      let limited = ByteReader(r.bytes, limit: infe.end)
      guard let rawID = limited.uint(p, size: idSize), let type = limited.fourCC(p + idSize + 2) else {
        continue
      }
      let id = UInt32(truncatingIfNeeded: rawID)
      var item = Item(type: type, isHidden: flags & 1 == 1, infeOffsets: [infe.offset])
      if type == FourCC("mime") {
        let nameStart = p + idSize + 6
        if let nameEnd = limited.nulTerminator(from: nameStart) {
          let typeEnd = limited.nulTerminator(from: nameEnd + 1) ?? infe.end
          if let text = limited.slice(nameEnd + 1, typeEnd - nameEnd - 1) {
            item.contentType = String(decoding: text, as: UTF8.self)
          }
        }
      }
      // A repeated id keeps its first entry, as libheif does.
      if file.items[id] == nil {
        file.items[id] = item
        file.itemOrder.append(id)
      } else {
        file.items[id]?.infeOffsets.append(infe.offset)
      }
    }
  }

  static func readReferences(_ r: ByteReader, _ iref: Box, into refs: inout [Reference], maxItems: Int)
    throws(Failure)
  {
    guard let version = r.u8(iref.body) else { throw .badBox("iref") }
    let idSize = version == 0 ? 2 : 4
    // Every entry names at least one item: more entries than items cannot be meaningful.
    let entries = try HEIFBoxReader.boxes(r, from: iref.body + 4, to: iref.end, max: 4 * maxItems + 16)
    if entries.count > 4 * maxItems + 8 { throw .tooManyItems(entries.count) }
    for entry in entries {
      let limited = ByteReader(r.bytes, limit: entry.end)
      guard let from = limited.uint(entry.body, size: idSize),
        let count = limited.u16(entry.body + idSize)
      else { throw .badBox("iref entry") }
      let p = entry.body + idSize + 2
      // The count is checked against the entry's bytes before anything is allocated.
      guard limited.has(p, Int(count) * idSize) else { throw .badBox("iref entry") }
      var to: [UInt32] = []
      to.reserveCapacity(Int(count))
      for i in 0..<Int(count) {
        to.append(UInt32(truncatingIfNeeded: limited.uint(p + i * idSize, size: idSize) ?? 0))
      }
      refs.append(
        Reference(
          type: entry.type, typeOffset: entry.offset + 4, from: UInt32(truncatingIfNeeded: from), to: to))
    }
  }

  /// Most extents one item may have: real files use one (or one per tile); each costs 16 bytes
  /// of bookkeeping, and a decoder would have to gather them all.
  static let maxExtentsPerItem = 1024

  /// The `iloc` box (versions 0–2; offset, length, base offset and index sizes of 0, 4 or 8 bytes).
  static func readLocations(_ r: ByteReader, _ iloc: Box?, maxItems: Int) throws(Failure) -> [UInt32:
    Location]
  {
    guard let iloc else { return [:] }
    let b = ByteReader(r.bytes, limit: iloc.end)
    guard let version = b.u8(iloc.body), version <= 2, let sizes = b.u8(iloc.body + 4),
      let sizes2 = b.u8(iloc.body + 5)
    else { throw .badBox("iloc") }
    let offsetSize = Int(sizes >> 4)
    let lengthSize = Int(sizes & 0x0F)
    let baseSize = Int(sizes2 >> 4)
    let indexSize = version >= 1 ? Int(sizes2 & 0x0F) : 0
    let idSize = version < 2 ? 2 : 4
    // ISO/IEC 14496-12 allows 0, 4 and 8 only; other widths would misalign every later field.
    for size in [offsetSize, lengthSize, baseSize, indexSize] where ![0, 4, 8].contains(size) {
      throw .badBox("iloc field size \(size)")
    }
    // Zero-width extents would let a small box declare billions of them.
    guard offsetSize + lengthSize + indexSize > 0 else { throw .badBox("iloc field sizes") }
    var p = iloc.body + 6
    guard let count = b.uint(p, size: idSize) else { throw .badBox("iloc") }
    if count > UInt64(maxItems) { throw .tooManyItems(Int(clamping: count)) }
    p += idSize
    var result: [UInt32: Location] = [:]
    for _ in 0..<count {
      guard let id = b.uint(p, size: idSize) else { throw .badBox("iloc") }
      p += idSize
      var location = Location()
      if version >= 1 {
        guard let method = b.u16(p) else { throw .badBox("iloc") }
        location.constructionMethod = Int(method & 0x0F)
        p += 2
      }
      guard let dataReference = b.u16(p), let base = b.uint(p + 2, size: baseSize),
        let extents = b.u16(p + 2 + baseSize)
      else { throw .badBox("iloc") }
      location.dataReferenceIndex = Int(dataReference)
      location.baseOffset = base
      p += 2 + baseSize + 2
      let extentSize = indexSize + offsetSize + lengthSize
      guard Int(extents) <= maxExtentsPerItem else { throw .badBox("iloc: \(extents) extents in one item") }
      guard b.has(p, Int(extents) * extentSize) else { throw .badBox("iloc") }
      location.extents.reserveCapacity(Int(extents))
      for _ in 0..<Int(extents) {
        p += indexSize
        let offset = b.uint(p, size: offsetSize) ?? 0
        let length = b.uint(p + offsetSize, size: lengthSize) ?? 0
        location.extents.append((offset, length))
        p += offsetSize + lengthSize
      }
      // A repeated id keeps its first entry.
      let key = UInt32(truncatingIfNeeded: id)
      if result[key] == nil { result[key] = location }
    }
    return result
  }

  /// The byte ranges of an item's data in the input, each extent checked to lie inside the file
  /// (construction method 0) or the `idat` payload (method 1). A length of 0 means "to the end".
  func extents(of id: UInt32) -> Result<[Range<Int>], ExtentProblem> {
    guard let locations else { return .failure(.malformed(locationFailure ?? "iloc")) }
    guard let location = locations[id] else { return .failure(.missing) }
    guard location.dataReferenceIndex == 0 else { return .failure(.unsupported("data in another file")) }
    let origin: Int
    let end: Int
    switch location.constructionMethod {
    case 0:
      origin = 0
      end = reader.bytes.count
    case 1:
      guard let idat else { return .failure(.malformed("no idat box")) }
      origin = idat.body
      end = idat.end
    default:
      return .failure(.unsupported("construction method \(location.constructionMethod)"))
    }
    var ranges: [Range<Int>] = []
    ranges.reserveCapacity(location.extents.count)
    for extent in location.extents {
      let (start, overflow) = location.baseOffset.addingReportingOverflow(extent.offset)
      guard !overflow, start <= UInt64(end - origin) else { return .failure(.outOfBounds) }
      let from = origin + Int(start)
      let available = UInt64(end - from)
      let length = extent.length == 0 ? available : extent.length
      guard length <= available else { return .failure(.outOfBounds) }
      ranges.append(from..<(from + Int(length)))
    }
    return .success(ranges)
  }

  /// Why an item's data cannot be located.
  enum ExtentProblem: Error, Equatable {
    /// No `iloc` entry.
    case missing
    /// An extent reaches past the end of the file or the `idat` box.
    case outOfBounds
    case unsupported(String)
    case malformed(String)
  }

  /// The bytes of an item, concatenated, at most `limit` of them; nil when they cannot be located.
  func itemBytes(_ id: UInt32, limit: Int) -> [UInt8]? {
    guard case .success(let ranges) = extents(of: id) else { return nil }
    var out: [UInt8] = []
    for range in ranges {
      let take = min(range.count, limit - out.count)
      out.append(contentsOf: reader.bytes[range.lowerBound..<(range.lowerBound + take)])
      if out.count >= limit { break }
    }
    return out
  }
}
