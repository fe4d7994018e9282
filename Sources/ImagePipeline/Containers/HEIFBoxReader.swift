import ImageContainers

/// Reads the ISOBMFF boxes of a HEIF/AVIF file: `ftyp` and the `meta` box with its item
/// information, locations, references and properties. Bounded by the input: every box must fit
/// in its parent, every count is checked against the bytes that remain.
public enum HEIFBoxReader {
  public enum Failure: Error, Equatable {
    case notHEIF
    case noMeta
    case noPrimaryItem
    case badBox(String)
    /// An image sequence (a `moov` track, `msf1`/`hevc`/`avis` brands) without a primary item.
    case imageSequence
    /// More items (or `ipma`/`iloc` entries) than `Limits.maxHEIFItems`.
    case tooManyItems(Int)
  }

  /// Bytes of an Exif item read at most; IFD0 sits at the start of real files.
  static let maxExifBytes = 1 << 20

  typealias Box = ISOBox

  /// Iterates the boxes in `[start, end)`, at most `max` of them; throws at the first box that
  /// does not fit.
  static func boxes(_ r: ByteReader, from start: Int, to end: Int, max: Int = .max) throws(Failure) -> [Box] {
    do {
      return try ISOBoxes.children(r, from: start, to: end, max: max)
    } catch {
      throw .badBox(error.reason)
    }
  }

  /// Reads the file's structure and plans the decoding of its primary image. Throws when it is
  /// not ISOBMFF, has no usable `meta`, or is an image sequence; a plan the reader refuses is
  /// returned in `HEIFBoxInfo.refusal`.
  public static func read(_ bytes: [UInt8], limits: Limits = Limits()) throws(Failure) -> HEIFBoxInfo {
    try bytes.withBytes { bytes throws(Failure) in try read(bytes, limits: limits) }
  }

  /// Reads the boxes of bytes read in place.
  public static func read(_ bytes: UnsafeRawBufferPointer, limits: Limits = Limits()) throws(Failure)
    -> HEIFBoxInfo
  {
    let r = ByteReader(bytes)
    guard r.fourCC(4) == FourCC("ftyp") else { throw .notHEIF }
    var file = HEIFFile(reader: r)
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
    file.majorBrand = r.fourCC(ftyp.body)!
    var brandOffset = ftyp.body + 8
    while brandOffset + 4 <= ftyp.end, let brand = r.fourCC(brandOffset) {
      file.compatibleBrands.append(brand)
      brandOffset += 4
    }
    file.hasMovie = top.contains { $0.type == FourCC("moov") }
    guard let meta = top.first(where: { $0.type == FourCC("meta") }) else {
      throw isSequence(file) ? .imageSequence : .noMeta
    }
    try readMeta(r, meta, into: &file, limits: limits)
    var info = makeInfo(file)
    switch HEIFPlanReader.plan(file, limits: limits) {
    case .success(let plan):
      info.plan = plan
      // A primary without `ispe` (an `iden`) has the size of the image it derives from.
      if info.width == 0 || info.height == 0 {
        (info.width, info.height) = (plan.storedSize.width, plan.storedSize.height)
      }
      // A grid without `colr` takes its first tile's, as libheif does (iPhone 7 Plus).
      if info.colour.isEmpty {
        info.colour = plan.colour
        info.metadata.iccProfile = info.iccProfile != nil
      }
      info.libheifRenames = HEIFReferencePatch.renames(for: file, plan: plan)
    case .failure(let refusal):
      info.refusal = refusal
    }
    return info
  }

  /// Whether the file is an image sequence: a movie box or a sequence brand.
  static func isSequence(_ file: HEIFFile) -> Bool {
    file.hasMovie || ["msf1", "hevc", "hevx", "avis"].contains { file.hasBrand(HEIFPlanReader.fourCC($0)) }
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

  private static func readMeta(_ r: ByteReader, _ meta: Box, into file: inout HEIFFile, limits: Limits)
    throws(Failure)
  {
    let children = try boxes(r, from: meta.body + 4, to: meta.end)
    func child(_ type: StaticString) -> Box? { children.first { $0.type == FourCC(type) } }
    guard let pitm = child("pitm") else { throw isSequence(file) ? .imageSequence : .noPrimaryItem }
    let pitmVersion = r.u8(pitm.body) ?? 0
    guard let primary = pitmVersion == 0 ? r.u16(pitm.body + 4).map(UInt32.init) : r.u32(pitm.body + 4)
    else { throw .badBox("pitm") }
    file.primaryItemID = primary
    let maxItems = limits.maxHEIFItems
    if let iinf = child("iinf") { try HEIFFile.readItemInfo(r, iinf, into: &file, maxItems: maxItems) }
    if let iref = child("iref") {
      try HEIFFile.readReferences(r, iref, into: &file.references, maxItems: maxItems)
    }
    file.indexReferences()
    if let iprp = child("iprp") { file.properties = try readProperties(r, iprp, maxItems: maxItems) }
    file.idat = child("idat")
    do {
      file.locations = try HEIFFile.readLocations(r, child("iloc"), maxItems: maxItems)
    } catch .tooManyItems(let count) {
      throw .tooManyItems(count)
    } catch {
      file.locations = nil
      file.locationFailure = "\(error)"
    }
  }

  /// The header facts of the primary image.
  private static func makeInfo(_ file: HEIFFile) -> HEIFBoxInfo {
    let r = file.reader
    var info = HEIFBoxInfo()
    info.majorBrand = file.majorBrand
    info.compatibleBrands = file.compatibleBrands
    info.hasMovie = file.hasMovie
    guard let primary = file.primaryItemID else { return info }
    info.primaryItemID = primary
    info.itemCount = file.declaredItemCount
    info.primaryItemType = file.items[primary]?.type
    for ref in file.references where ref.to.count > 1 {
      if ref.type == FourCC("auxl") || ref.type == FourCC("cdsc") {
        info.multiTargetReferenceOffsets.append(ref.typeOffset)
      }
    }
    apply(file.properties, to: primary, from: r, into: &info)
    // An alpha auxiliary image is an item whose auxC names alpha and which refers to the primary.
    for ref in file.references where ref.type == FourCC("auxl") && ref.to.contains(primary) {
      info.auxiliaryCount += 1
      if file.properties.auxiliaryType(of: ref.from, r).map(isAlphaURN) == true { info.hasAlpha = true }
    }
    for ref in file.references where ref.to.contains(primary) {
      if ref.type == FourCC("thmb") { info.thumbnailCount += 1 }
    }
    if info.primaryItemType == FourCC("grid") {
      info.tileCount = file.references(FourCC("dimg"), from: primary).count
    }

    // Metadata items: Exif and XMP (mime application/rdf+xml) describing the primary.
    let described = Set(file.items(referencing: primary, as: FourCC("cdsc")))
    for id in file.itemOrder.sorted() {
      guard let item = file.items[id] else { continue }
      if item.type == FourCC("Exif") {
        info.metadata.exif = true
        guard info.exif == nil, described.contains(id) || described.isEmpty else { continue }
        if let payload = file.itemBytes(id, limit: maxExifBytes) {
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
    return info
  }

  static func isAlphaURN(_ urn: String) -> Bool {
    urn == "urn:mpeg:hevc:2015:auxid:1" || urn == "urn:mpeg:mpegB:cicp:systems:auxiliary:alpha"
  }

  /// A HEIF Exif item starts with a 32-bit offset to the TIFF header (often after `Exif\0\0`).
  static func exifFromItemPayload(_ payload: [UInt8]) -> EXIFInfo? {
    payload.withUnsafeBytes { payload in
      let r = ByteReader(payload)
      guard let skip = r.u32(0), UInt64(skip) + 4 <= UInt64(payload.count) else { return nil }
      let start = 4 + Int(skip)
      if let info = EXIFReader.read(ByteReader(payload, start: start)) { return info }
      // Some writers put the TIFF header right after the offset field regardless of its value.
      return EXIFReader.read(ByteReader(payload, start: 4))
    }
  }

}
