/// A small HEIF reader for the HEVC decoder tests only: the `hvcC` record and coded bytes of
/// the primary image's tiles (or of its one picture), and of its alpha auxiliary image. It
/// trusts its input (corpus files and our fixtures); the product reads HEIF with the fuzzed
/// box reader in ImagePipeline.
struct HEIFTileReader {
  /// One coded picture: its configuration record and its sample (length-prefixed NAL units).
  struct Picture {
    var hvcC: [UInt8]
    var sample: [UInt8]
  }

  /// The pictures of one image item: one, or a grid's tiles in raster order.
  struct Image {
    var itemType: String
    var tiles: [Picture]
    /// Columns and rows of a grid; (1, 1) otherwise.
    var grid: (columns: Int, rows: Int)
  }

  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  private struct Box {
    var type: String
    var payload: Range<Int>
  }

  private let bytes: [UInt8]
  private var primaryID = 0
  private var types: [Int: String] = [:]
  private var locations: [Int: [(method: Int, offset: Int, length: Int)]] = [:]
  private var references: [(type: String, from: Int, to: [Int])] = []
  private var properties: [Box] = []
  private var associations: [Int: [Int]] = [:]
  private var idat: Range<Int> = 0..<0

  init(_ bytes: [UInt8]) throws {
    self.bytes = bytes
    guard let meta = try boxes(in: 0..<bytes.count).first(where: { $0.type == "meta" }) else {
      throw Failure(description: "no meta box")
    }
    for box in try boxes(in: meta.payload.lowerBound + 4..<meta.payload.upperBound) {
      let p = box.payload
      switch box.type {
      case "pitm": primaryID = Int(try uint(p.lowerBound, byte(p.lowerBound) == 0 ? 2 : 4, offset: 4))
      case "iinf": try readItemInfo(p)
      case "iloc": try readLocations(p)
      case "iref": try readReferences(p)
      case "iprp": try readProperties(p)
      case "idat": idat = p
      default: break
      }
    }
  }

  /// The primary image.
  func primary() throws -> Image { try image(primaryID) }

  /// The coded picture of `hvc1` item `id`.
  func item(_ id: Int) throws -> Picture { try picture(id) }

  /// The auxiliary image whose `auxC` says alpha, when the primary has one.
  func alpha() throws -> Image? {
    for reference in references where reference.type == "auxl" && reference.to.contains(primaryID) {
      guard let auxC = property("auxC", of: reference.from) else { continue }
      let urn = String(decoding: bytes[auxC.payload].dropFirst(4).prefix { $0 != 0 }, as: UTF8.self)
      // MPEG-B's alpha URN, or HEVC's (auxid 1 is alpha in ISO/IEC 23008-12).
      if ["urn:mpeg:mpegB:cicp:systems:auxiliary:alpha", "urn:mpeg:hevc:2015:auxid:1"].contains(urn) {
        return try image(reference.from)
      }
    }
    return nil
  }

  private func image(_ id: Int) throws -> Image {
    let type = types[id] ?? "?"
    if type == "hvc1" { return Image(itemType: type, tiles: [try picture(id)], grid: (1, 1)) }
    guard type == "grid" else { throw Failure(description: "item \(id) is \(type)") }
    let descriptor = try itemBytes(id)
    guard descriptor.count >= 4 else { throw Failure(description: "grid descriptor") }
    let tiles = references.first { $0.type == "dimg" && $0.from == id }?.to ?? []
    let grid = (columns: Int(descriptor[3]) + 1, rows: Int(descriptor[2]) + 1)
    guard tiles.count == grid.columns * grid.rows else { throw Failure(description: "\(tiles.count) tiles") }
    return Image(itemType: type, tiles: try tiles.map(picture), grid: grid)
  }

  private func picture(_ id: Int) throws -> Picture {
    guard let hvcC = property("hvcC", of: id) else { throw Failure(description: "item \(id) has no hvcC") }
    return Picture(hvcC: Array(bytes[hvcC.payload]), sample: try itemBytes(id))
  }

  private func property(_ type: String, of id: Int) -> Box? {
    for index in associations[id] ?? [] where index > 0 && index <= properties.count {
      if properties[index - 1].type == type { return properties[index - 1] }
    }
    return nil
  }

  private func itemBytes(_ id: Int) throws -> [UInt8] {
    guard let extents = locations[id] else { throw Failure(description: "item \(id) has no iloc entry") }
    var out: [UInt8] = []
    for extent in extents {
      let base = extent.method == 1 ? idat.lowerBound : 0
      let start = base + extent.offset
      guard start + extent.length <= bytes.count else { throw Failure(description: "extent past the end") }
      out += bytes[start..<start + extent.length]
    }
    return out
  }

  private func byte(_ at: Int) throws -> Int {
    guard at < bytes.count else { throw Failure(description: "read past the end") }
    return Int(bytes[at])
  }

  private func uint(_ at: Int, _ size: Int, offset: Int = 0) throws -> UInt64 {
    var value: UInt64 = 0
    for i in 0..<size { value = value << 8 | UInt64(try byte(at + offset + i)) }
    return value
  }

  private func boxes(in range: Range<Int>) throws -> [Box] {
    var result: [Box] = []
    var at = range.lowerBound
    while at + 8 <= range.upperBound {
      var size = Int(try uint(at, 4))
      var header = 8
      if size == 1 {
        size = Int(try uint(at + 8, 8))
        header = 16
      } else if size == 0 {
        size = range.upperBound - at
      }
      guard size >= header, at + size <= range.upperBound else { throw Failure(description: "box size") }
      let type = String(decoding: bytes[at + 4..<at + 8], as: UTF8.self)
      result.append(Box(type: type, payload: at + header..<at + size))
      at += size
    }
    return result
  }

  private mutating func readItemInfo(_ p: Range<Int>) throws {
    let countSize = try byte(p.lowerBound) == 0 ? 2 : 4
    for infe in try boxes(in: p.lowerBound + 4 + countSize..<p.upperBound) where infe.type == "infe" {
      let version = try byte(infe.payload.lowerBound)
      guard version >= 2 else { continue }
      let idSize = version == 2 ? 2 : 4
      let id = Int(try uint(infe.payload.lowerBound + 4, idSize))
      let typeAt = infe.payload.lowerBound + 4 + idSize + 2
      types[id] = String(decoding: bytes[typeAt..<typeAt + 4], as: UTF8.self)
    }
  }

  private mutating func readLocations(_ p: Range<Int>) throws {
    let version = try byte(p.lowerBound)
    var at = p.lowerBound + 4
    let sizes = try byte(at)
    let sizes2 = try byte(at + 1)
    let (offsetSize, lengthSize, baseSize) = (sizes >> 4, sizes & 15, sizes2 >> 4)
    let indexSize = version >= 1 ? sizes2 & 15 : 0
    at += 2
    let countSize = version < 2 ? 2 : 4
    let count = Int(try uint(at, countSize))
    at += countSize
    for _ in 0..<count {
      let id = Int(try uint(at, version < 2 ? 2 : 4))
      at += version < 2 ? 2 : 4
      var method = 0
      if version >= 1 {
        method = Int(try uint(at, 2)) & 15
        at += 2
      }
      at += 2  // data_reference_index
      let base = Int(try uint(at, baseSize))
      at += baseSize
      let extentCount = Int(try uint(at, 2))
      at += 2
      var extents: [(method: Int, offset: Int, length: Int)] = []
      for _ in 0..<extentCount {
        at += indexSize
        let offset = Int(try uint(at, offsetSize))
        at += offsetSize
        let length = Int(try uint(at, lengthSize))
        at += lengthSize
        extents.append((method, base + offset, length))
      }
      locations[id] = extents
    }
  }

  private mutating func readReferences(_ p: Range<Int>) throws {
    let idSize = try byte(p.lowerBound) == 0 ? 2 : 4
    for box in try boxes(in: p.lowerBound + 4..<p.upperBound) {
      var at = box.payload.lowerBound
      let from = Int(try uint(at, idSize))
      let count = Int(try uint(at + idSize, 2))
      at += idSize + 2
      var to: [Int] = []
      for _ in 0..<count {
        to.append(Int(try uint(at, idSize)))
        at += idSize
      }
      references.append((box.type, from, to))
    }
  }

  private mutating func readProperties(_ p: Range<Int>) throws {
    for box in try boxes(in: p) {
      if box.type == "ipco" { properties = try boxes(in: box.payload) }
      guard box.type == "ipma" else { continue }
      let version = try byte(box.payload.lowerBound)
      let flags = try uint(box.payload.lowerBound + 1, 3)
      var at = box.payload.lowerBound + 4
      let count = Int(try uint(at, 4))
      at += 4
      for _ in 0..<count {
        let id = Int(try uint(at, version < 1 ? 2 : 4))
        at += version < 1 ? 2 : 4
        let associationCount = try byte(at)
        at += 1
        var indices: [Int] = []
        for _ in 0..<associationCount {
          if flags & 1 != 0 {
            indices.append(Int(try uint(at, 2)) & 0x7FFF)
            at += 2
          } else {
            indices.append(try byte(at) & 0x7F)
            at += 1
          }
        }
        associations[id, default: []] += indices
      }
    }
  }
}
