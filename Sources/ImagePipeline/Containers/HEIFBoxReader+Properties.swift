import ImageContainers

extension HEIFBoxReader {
  /// One `ipma` association: a 1-based index into `ipco` and whether it is marked essential.
  struct Association: Equatable {
    let index: Int
    let essential: Bool
  }

  /// The `ipco` property boxes and the `ipma` associations of each item, in association order.
  struct Properties {
    var boxes: [Box] = []
    var associations: [UInt32: [Association]] = [:]

    /// An item's properties in `ipma` order; index 0 ("none") and indices past `ipco` are left out.
    func of(_ item: UInt32) -> [Box] {
      (associations[item] ?? []).compactMap { self[$0] }
    }

    /// An item's properties with their essential flags, in `ipma` order.
    func associated(with item: UInt32) -> [(box: Box, essential: Bool)] {
      (associations[item] ?? []).compactMap { a in self[a].map { ($0, a.essential) } }
    }

    /// Whether one of the item's associations names a property that does not exist.
    func hasDanglingAssociation(_ item: UInt32) -> Bool {
      (associations[item] ?? []).contains { $0.index > boxes.count }
    }

    subscript(_ association: Association) -> Box? {
      association.index >= 1 && association.index <= boxes.count ? boxes[association.index - 1] : nil
    }

    /// The first property of `type` associated with `item`.
    func first(_ type: FourCC, of item: UInt32) -> Box? {
      of(item).first { $0.type == type }
    }

    /// The URN of an item's `auxC` property.
    func auxiliaryType(of item: UInt32, _ r: ByteReader) -> String? {
      guard let auxC = first(FourCC("auxC"), of: item) else { return nil }
      let limited = ByteReader(r.bytes, limit: auxC.end)
      let start = auxC.body + 4
      let end = limited.nulTerminator(from: start) ?? auxC.end
      guard let text = limited.slice(start, end - start) else { return nil }
      return String(decoding: text, as: UTF8.self)
    }
  }

  /// Most property boxes read from `ipco`: `ipma` indices are at most 15 bits, so later boxes
  /// cannot be associated with anything.
  static let maxProperties = 0x7FFF

  static func readProperties(_ r: ByteReader, _ iprp: Box, maxItems: Int) throws(Failure) -> Properties {
    var properties = Properties()
    let children = try boxes(r, from: iprp.body, to: iprp.end)
    if let ipco = children.first(where: { $0.type == FourCC("ipco") }) {
      properties.boxes = try boxes(r, from: ipco.body, to: ipco.end, max: maxProperties)
    }
    for ipma in children where ipma.type == FourCC("ipma") {
      let b = ByteReader(r.bytes, limit: ipma.end)
      guard let version = b.u8(ipma.body), let flags = b.u24(ipma.body + 1), let count = b.u32(ipma.body + 4)
      else { throw .badBox("ipma") }
      if count > UInt32(clamping: maxItems) { throw .tooManyItems(Int(count)) }
      let idSize = version < 1 ? 2 : 4
      let indexSize = flags & 1 == 1 ? 2 : 1
      let essentialBit: UInt64 = indexSize == 2 ? 0x8000 : 0x80
      var p = ipma.body + 8
      for _ in 0..<count {
        guard let id = b.uint(p, size: idSize), let n = b.u8(p + idSize) else { throw .badBox("ipma") }
        p += idSize + 1
        guard b.has(p, Int(n) * indexSize) else { throw .badBox("ipma") }
        var list: [Association] = []
        for _ in 0..<Int(n) {
          let raw = b.uint(p, size: indexSize) ?? 0
          list.append(Association(index: Int(raw & (essentialBit - 1)), essential: raw & essentialBit != 0))
          p += indexSize
        }
        properties.associations[UInt32(truncatingIfNeeded: id), default: []].append(contentsOf: list)
      }
    }
    return properties
  }

  /// Fills size, transforms, colour and depth of the primary item from its properties.
  static func apply(
    _ properties: Properties, to primary: UInt32, from r: ByteReader, into info: inout HEIFBoxInfo
  ) {
    for box in properties.of(primary) {
      let b = ByteReader(r.bytes, limit: box.end)
      switch box.type {
      case FourCC("ispe"):
        if let w = b.u32(box.body + 4), let h = b.u32(box.body + 8) {
          info.width = Int(w)
          info.height = Int(h)
        }
      case FourCC("irot"):
        if let angle = b.u8(box.body) { info.rotationCCW = Int(angle & 3) * 90 }
      case FourCC("imir"):
        if let axis = b.u8(box.body) { info.mirrorAxis = Int(axis & 1) }
      case FourCC("clap"):
        var values: [Int64] = []
        for i in 0..<4 { values.append(Int64(b.u32(box.body + i * 4) ?? 0)) }
        if values[1] > 0, values[3] > 0 {
          info.cleanAperture = (Int(values[0] / values[1]), Int(values[2] / values[3]))
        }
      case FourCC("colr"):
        if let colour = colour(b, box) { info.colour.append(colour) }
      case FourCC("pixi"):
        if let channels = b.u8(box.body + 4), channels > 0, let depth = b.u8(box.body + 5) {
          info.bitDepth = Int(depth)
        }
      default:
        break
      }
    }
  }

  /// A `colr` box: nclx, or an ICC profile (`prof` or `rICC`).
  static func colour(_ b: ByteReader, _ box: Box) -> HEIFBoxInfo.Colour? {
    guard let kind = b.fourCC(box.body) else { return nil }
    if kind == FourCC("nclx"), let p = b.u16(box.body + 4), let t = b.u16(box.body + 6),
      let m = b.u16(box.body + 8), let f = b.u8(box.body + 10)
    {
      return .nclx(primaries: Int(p), transfer: Int(t), matrix: Int(m), fullRange: f & 0x80 != 0)
    }
    if kind == FourCC("rICC") || kind == FourCC("prof"),
      let profile = b.slice(box.body + 4, box.end - box.body - 4)
    {
      return .icc(Array(profile))
    }
    return nil
  }
}
