/// Reads the ISOBMFF boxes of a HEIF/AVIF file: `ftyp` and the `meta` box with its item
/// information, locations, references and properties. Bounded by the input: every box must fit
/// in its parent, every count is checked against the bytes that remain.
public enum HEIFBoxReader {
  public enum Failure: Error, Equatable {
    case notHEIF
    case noMeta
    case noPrimaryItem
    case badBox(String)
  }

  /// Bytes of an Exif item read at most; IFD0 sits at the start of real files.
  static let maxExifBytes = 1 << 20

  struct Box {
    let type: FourCC
    /// Offset of the box header.
    let offset: Int
    /// Offset of the payload (after size/type/largesize, before any FullBox version).
    let body: Int
    let end: Int
  }

  struct Location {
    var constructionMethod = 0
    var baseOffset: UInt64 = 0
    var extents: [(offset: UInt64, length: UInt64)] = []
  }

  struct Reference {
    let type: FourCC
    let typeOffset: Int
    let from: UInt32
    let to: [UInt32]
  }

  struct Item {
    var type = FourCC(0, 0, 0, 0)
    var contentType = ""
  }

  /// Iterates the boxes in `[start, end)`; stops at the first box that does not fit.
  static func boxes(_ r: ByteReader, from start: Int, to end: Int) throws(Failure) -> [Box] {
    var result: [Box] = []
    var offset = start
    while offset < end {
      guard end - offset >= 8, let size32 = r.u32(offset), let type = r.fourCC(offset + 4) else {
        throw .badBox("truncated box header")
      }
      var header = 8
      var size = UInt64(size32)
      if size32 == 1 {
        guard let large = r.u64(offset + 8) else { throw .badBox("truncated largesize") }
        size = large
        header = 16
      } else if size32 == 0 {
        size = UInt64(end - offset)
      }
      guard size >= UInt64(header), size <= UInt64(end - offset) else {
        throw .badBox("box \(type) size \(size) does not fit")
      }
      let boxEnd = offset + Int(size)
      result.append(Box(type: type, offset: offset, body: offset + header, end: boxEnd))
      offset = boxEnd
    }
    return result
  }

  /// Reads the file's structure. Throws when it is not ISOBMFF or has no usable `meta`.
  public static func read(_ bytes: [UInt8]) throws(Failure) -> HEIFBoxInfo {
    let r = ByteReader(bytes)
    guard r.fourCC(4) == FourCC("ftyp") else { throw .notHEIF }
    var info = HEIFBoxInfo()
    let top: [Box]
    do {
      top = try boxes(r, from: 0, to: bytes.count)
    } catch {
      // A truncated file may still have a complete ftyp and meta before the cut.
      top = (try? boxesUntilFailure(r, to: bytes.count)) ?? []
    }
    guard let ftyp = top.first, ftyp.type == FourCC("ftyp"), ftyp.end - ftyp.body >= 8 else {
      throw .notHEIF
    }
    info.majorBrand = r.fourCC(ftyp.body)!
    var brandOffset = ftyp.body + 8
    while brandOffset + 4 <= ftyp.end, let brand = r.fourCC(brandOffset) {
      info.compatibleBrands.append(brand)
      brandOffset += 4
    }
    info.hasMovie = top.contains { $0.type == FourCC("moov") }
    guard let meta = top.first(where: { $0.type == FourCC("meta") }) else { throw .noMeta }
    try readMeta(r, meta, into: &info)
    return info
  }

  private static func boxesUntilFailure(_ r: ByteReader, to end: Int) throws(Failure) -> [Box] {
    var result: [Box] = []
    var offset = 0
    while offset < end, let one = try? boxes(r, from: offset, to: min(end, offset + boxSize(r, offset))) {
      guard let box = one.first else { break }
      result.append(box)
      offset = box.end
    }
    return result
  }

  private static func boxSize(_ r: ByteReader, _ offset: Int) -> Int {
    guard let size = r.u32(offset), size >= 8 else { return 0 }
    return Int(size)
  }

  private static func readMeta(_ r: ByteReader, _ meta: Box, into info: inout HEIFBoxInfo) throws(Failure) {
    let children = try boxes(r, from: meta.body + 4, to: meta.end)
    func child(_ type: StaticString) -> Box? { children.first { $0.type == FourCC(type) } }

    guard let pitm = child("pitm") else { throw .noPrimaryItem }
    let pitmVersion = r.u8(pitm.body) ?? 0
    guard let primary = pitmVersion == 0 ? r.u16(pitm.body + 4).map(UInt32.init) : r.u32(pitm.body + 4)
    else { throw .badBox("pitm") }
    info.primaryItemID = primary

    var items: [UInt32: Item] = [:]
    if let iinf = child("iinf") { try readItemInfo(r, iinf, into: &items, count: &info.itemCount) }
    info.primaryItemType = items[primary]?.type

    var references: [Reference] = []
    if let iref = child("iref") { try readReferences(r, iref, into: &references) }
    for ref in references where ref.to.count > 1 {
      if ref.type == FourCC("auxl") || ref.type == FourCC("cdsc") {
        info.multiTargetReferenceOffsets.append(ref.typeOffset)
      }
    }

    if let iprp = child("iprp") {
      let properties = try readProperties(r, iprp)
      apply(properties, to: primary, from: r, into: &info)
      // An alpha auxiliary image is an item whose auxC names alpha and which refers to the primary.
      for ref in references where ref.type == FourCC("auxl") && ref.to.contains(primary) {
        info.auxiliaryCount += 1
        if properties.auxiliaryType(of: ref.from, r).map(isAlphaURN) == true { info.hasAlpha = true }
      }
    }

    for ref in references where ref.to.contains(primary) {
      if ref.type == FourCC("thmb") { info.thumbnailCount += 1 }
    }
    if info.primaryItemType == FourCC("grid") {
      info.tileCount = references.filter { $0.type == FourCC("dimg") && $0.from == primary }
        .reduce(0) { $0 + $1.to.count }
    }

    // Metadata items: Exif and XMP (mime application/rdf+xml) describing the primary.
    let described = Set(
      references.filter { $0.type == FourCC("cdsc") && $0.to.contains(primary) }.map(\.from))
    var locations: [UInt32: Location]?
    for (id, item) in items.sorted(by: { $0.key < $1.key }) {
      if item.type == FourCC("Exif") {
        info.metadata.exif = true
        guard info.exif == nil, described.contains(id) || described.isEmpty else { continue }
        if locations == nil { locations = try? readLocations(r, child("iloc")) }
        let idat = child("idat")
        if let location = locations?[id], let payload = itemBytes(r, location, idat: idat) {
          info.exif = exifFromItemPayload(payload)
          info.metadata.absorb(info.exif)
        }
      } else if item.type == FourCC("mime"), item.contentType.hasPrefix("application/rdf+xml") {
        info.hasXMP = true
        info.metadata.xmp = true
      }
    }
    info.metadata.iccProfile = info.iccProfile != nil
    info.metadata.thumbnail = info.thumbnailCount > 0
    info.metadata.auxiliaryImages = info.auxiliaryCount > 0
  }

  static func isAlphaURN(_ urn: String) -> Bool {
    urn == "urn:mpeg:hevc:2015:auxid:1" || urn == "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha"
  }

  /// A HEIF Exif item starts with a 32-bit offset to the TIFF header (often after `Exif\0\0`).
  static func exifFromItemPayload(_ payload: [UInt8]) -> EXIFInfo? {
    let r = ByteReader(payload)
    guard let skip = r.u32(0), UInt64(skip) + 4 <= UInt64(payload.count) else { return nil }
    let start = 4 + Int(skip)
    if let info = EXIFReader.read(ByteReader(payload, start: start)) { return info }
    // Some writers put the TIFF header right after the offset field regardless of its value.
    return EXIFReader.read(ByteReader(payload, start: 4))
  }

  private static func readItemInfo(
    _ r: ByteReader, _ iinf: Box, into items: inout [UInt32: Item], count: inout Int
  ) throws(Failure) {
    guard let version = r.u8(iinf.body) else { throw .badBox("iinf") }
    let countSize = version == 0 ? 2 : 4
    guard let declared = r.uint(iinf.body + 4, size: countSize) else { throw .badBox("iinf") }
    let first = iinf.body + 4 + countSize
    let entries = try boxes(r, from: first, to: iinf.end)
    count = max(Int(clamping: declared), entries.count)
    for infe in entries where infe.type == FourCC("infe") {
      guard let v = r.u8(infe.body), v >= 2 else { continue }
      let idSize = v == 2 ? 2 : 4
      let p = infe.body + 4
      guard let id = r.uint(p, size: idSize), let type = r.fourCC(p + idSize + 2) else { continue }
      var item = Item(type: type)
      if type == FourCC("mime") {
        let nameStart = p + idSize + 6
        let limited = ByteReader(r.bytes, limit: infe.end)
        if let nameEnd = limited.nulTerminator(from: nameStart) {
          let typeEnd = limited.nulTerminator(from: nameEnd + 1) ?? infe.end
          if let text = limited.slice(nameEnd + 1, typeEnd - nameEnd - 1) {
            item.contentType = String(decoding: text, as: UTF8.self)
          }
        }
      }
      items[UInt32(truncatingIfNeeded: id)] = item
    }
  }

  private static func readReferences(_ r: ByteReader, _ iref: Box, into refs: inout [Reference])
    throws(Failure)
  {
    guard let version = r.u8(iref.body) else { throw .badBox("iref") }
    let idSize = version == 0 ? 2 : 4
    for entry in try boxes(r, from: iref.body + 4, to: iref.end) {
      let limited = ByteReader(r.bytes, limit: entry.end)
      guard let from = limited.uint(entry.body, size: idSize),
        let count = limited.u16(entry.body + idSize)
      else { throw .badBox("iref entry") }
      var to: [UInt32] = []
      var p = entry.body + idSize + 2
      for _ in 0..<Int(count) {
        guard let id = limited.uint(p, size: idSize) else { throw .badBox("iref entry") }
        to.append(UInt32(truncatingIfNeeded: id))
        p += idSize
      }
      refs.append(
        Reference(
          type: entry.type, typeOffset: entry.offset + 4, from: UInt32(truncatingIfNeeded: from), to: to))
    }
  }

  static func readLocations(_ r: ByteReader, _ iloc: Box?) throws(Failure) -> [UInt32: Location] {
    guard let iloc else { return [:] }
    let b = ByteReader(r.bytes, limit: iloc.end)
    guard let version = b.u8(iloc.body), let sizes = b.u8(iloc.body + 4), let sizes2 = b.u8(iloc.body + 5)
    else { throw .badBox("iloc") }
    let offsetSize = Int(sizes >> 4)
    let lengthSize = Int(sizes & 0x0F)
    let baseSize = Int(sizes2 >> 4)
    let indexSize = version >= 1 ? Int(sizes2 & 0x0F) : 0
    let idSize = version < 2 ? 2 : 4
    // Zero-width extents would let a small box declare billions of them.
    guard offsetSize + lengthSize + indexSize > 0 else { throw .badBox("iloc field sizes") }
    var p = iloc.body + 6
    guard let count = b.uint(p, size: idSize) else { throw .badBox("iloc") }
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
      p += 2  // data_reference_index
      guard let base = b.uint(p, size: baseSize), let extents = b.u16(p + baseSize) else {
        throw .badBox("iloc")
      }
      location.baseOffset = base
      p += baseSize + 2
      for _ in 0..<Int(extents) {
        p += indexSize
        guard let offset = b.uint(p, size: offsetSize), let length = b.uint(p + offsetSize, size: lengthSize)
        else { throw .badBox("iloc") }
        location.extents.append((offset, length))
        p += offsetSize + lengthSize
      }
      result[UInt32(truncatingIfNeeded: id)] = location
    }
    return result
  }

  /// The bytes of one item (file offsets or `idat`), up to `maxExifBytes`; nil when out of bounds.
  static func itemBytes(_ r: ByteReader, _ location: Location, idat: Box?) -> [UInt8]? {
    let origin: Int
    let end: Int
    switch location.constructionMethod {
    case 0:
      origin = 0
      end = r.bytes.count
    case 1:
      guard let idat else { return nil }
      origin = idat.body
      end = idat.end
    default:
      return nil
    }
    var out: [UInt8] = []
    for extent in location.extents {
      let (start, overflow) = location.baseOffset.addingReportingOverflow(extent.offset)
      guard !overflow, start <= UInt64(end - origin) else { return nil }
      let from = origin + Int(start)
      // A length of 0 means "to the end of the file".
      let available = UInt64(end - from)
      let length = extent.length == 0 ? available : extent.length
      guard length <= available else { return nil }
      let take = min(Int(length), maxExifBytes - out.count)
      out.append(contentsOf: r.bytes[from..<(from + take)])
      if out.count >= maxExifBytes { break }
    }
    return out
  }
}
