extension HEIFBoxReader {
  /// The `ipco` property boxes and the `ipma` associations of each item (1-based indices).
  struct Properties {
    var boxes: [Box] = []
    var associations: [UInt32: [Int]] = [:]

    func of(_ item: UInt32) -> [Box] {
      (associations[item] ?? []).compactMap { index in
        index >= 1 && index <= boxes.count ? boxes[index - 1] : nil
      }
    }

    /// The URN of an item's `auxC` property.
    func auxiliaryType(of item: UInt32, _ r: ByteReader) -> String? {
      guard let auxC = of(item).first(where: { $0.type == FourCC("auxC") }) else { return nil }
      let limited = ByteReader(r.bytes, limit: auxC.end)
      let start = auxC.body + 4
      let end = limited.nulTerminator(from: start) ?? auxC.end
      guard let text = limited.slice(start, end - start) else { return nil }
      return String(decoding: text, as: UTF8.self)
    }
  }

  static func readProperties(_ r: ByteReader, _ iprp: Box) throws(Failure) -> Properties {
    var properties = Properties()
    let children = try boxes(r, from: iprp.body, to: iprp.end)
    if let ipco = children.first(where: { $0.type == FourCC("ipco") }) {
      properties.boxes = try boxes(r, from: ipco.body, to: ipco.end)
    }
    for ipma in children where ipma.type == FourCC("ipma") {
      let b = ByteReader(r.bytes, limit: ipma.end)
      guard let version = b.u8(ipma.body), let flags = b.u24(ipma.body + 1), let count = b.u32(ipma.body + 4)
      else { throw .badBox("ipma") }
      let idSize = version < 1 ? 2 : 4
      let indexSize = flags & 1 == 1 ? 2 : 1
      var p = ipma.body + 8
      for _ in 0..<count {
        guard let id = b.uint(p, size: idSize), let n = b.u8(p + idSize) else { throw .badBox("ipma") }
        p += idSize + 1
        var indices: [Int] = []
        for _ in 0..<Int(n) {
          guard let raw = b.uint(p, size: indexSize) else { throw .badBox("ipma") }
          indices.append(Int(raw & (indexSize == 2 ? 0x7FFF : 0x7F)))
          p += indexSize
        }
        properties.associations[UInt32(truncatingIfNeeded: id), default: []].append(contentsOf: indices)
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
        guard let kind = b.fourCC(box.body) else { break }
        if kind == FourCC("nclx"), let p = b.u16(box.body + 4), let t = b.u16(box.body + 6),
          let m = b.u16(box.body + 8), let f = b.u8(box.body + 10)
        {
          info.colour.append(
            .nclx(primaries: Int(p), transfer: Int(t), matrix: Int(m), fullRange: f & 0x80 != 0))
        } else if kind == FourCC("rICC") || kind == FourCC("prof"),
          let profile = b.slice(box.body + 4, box.end - box.body - 4)
        {
          info.colour.append(.icc(Array(profile)))
        }
      case FourCC("pixi"):
        if let channels = b.u8(box.body + 4), channels > 0, let depth = b.u8(box.body + 5) {
          info.bitDepth = Int(depth)
        }
      default:
        break
      }
    }
  }
}
