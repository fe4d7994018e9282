import ImageContainers

extension HEIFPlanReader {
  /// The plan of one image item: a coded item, or a grid of them.
  static func imagePlan(_ file: HEIFFile, _ id: UInt32, limits: Limits, notes: inout [String])
    throws(HEIFRefusal) -> HEIFImagePlan
  {
    guard let item = file.items[id] else {
      throw HEIFRefusal(.corrupt, "item \(id) is referenced but not described")
    }
    let size = ispe(file, id)
    switch item.type {
    case FourCC("grid"):
      let grid = try gridPlan(file, id, limits: limits, notes: &notes)
      if let size, size != grid.outputSize {
        notes.append("the grid's ispe \(size) differs from its output size \(grid.outputSize)")
      }
      return HEIFImagePlan(
        itemID: id, itemType: item.type, isHidden: item.isHidden, ispe: size, content: .grid(grid))
    case FourCC("iovl"):
      // An overlay is composed by libheif; its inputs are not described here.
      return HEIFImagePlan(
        itemID: id, itemType: item.type, isHidden: item.isHidden, ispe: size, content: .other)
    default:
      guard libheifImageTypes.contains(item.type) else {
        throw HEIFRefusal(.unsupported, "HEIF images coded as \(item.type) are not supported")
      }
      let coded = try codedItem(file, id, notes: &notes)
      return HEIFImagePlan(
        itemID: id, itemType: item.type, isHidden: item.isHidden, ispe: size, content: .coded(coded))
    }
  }

  /// A coded item: its data ranges (each checked in bounds), `ispe` and, for `hvc1`, its `hvcC`;
  /// for `av01`, its `av1C` and the layers `a1op`/`lsel` select.
  static func codedItem(_ file: HEIFFile, _ id: UInt32, notes: inout [String]) throws(HEIFRefusal)
    -> HEIFCodedItem
  {
    guard let item = file.items[id] else {
      throw HEIFRefusal(.corrupt, "item \(id) is referenced but not described")
    }
    try checkEssential(file, id)
    let data: [Range<Int>]
    switch file.extents(of: id) {
    case .success(let ranges): data = ranges
    case .failure(.outOfBounds):
      throw HEIFRefusal(.truncated, "the data of item \(id) lies past the end of the file")
    case .failure(.missing): throw HEIFRefusal(.corrupt, "item \(id) has no data (no iloc entry)")
    case .failure(.unsupported(let what)):
      throw HEIFRefusal(.unsupported, "item \(id) keeps its data in \(what)")
    case .failure(.malformed(let what)):
      throw HEIFRefusal(.corrupt, "the item locations are malformed: \(what)")
    }
    guard data.contains(where: { !$0.isEmpty }) else { throw HEIFRefusal(.corrupt, "item \(id) has no data") }
    var coded = HEIFCodedItem(
      itemID: id, itemType: item.type, isHidden: item.isHidden, ispe: ispe(file, id), data: data, hevc: nil,
      hevcProblem: nil, unknownEssentialProperties: unknownEssential(file, id))
    if item.type == FourCC("hvc1") {
      if let box = file.properties.first(FourCC("hvcC"), of: id) {
        switch HEVCConfiguration.read(file.reader, from: box.body, to: box.end) {
        case .success(let configuration):
          coded.hevc = configuration
          if configuration.sequence == nil { coded.hevcProblem = "the SPS could not be read" }
        case .failure(let problem):
          coded.hevcProblem = problem.reason
        }
      } else {
        coded.hevcProblem = "no hvcC property"
      }
    }
    if item.type == FourCC("av01"), let box = file.properties.first(FourCC("av1C"), of: id) {
      coded.av1 = AV1Configuration.read(file.reader, from: box.body, to: box.end)
    }
    if let selection = try AV1LayerSelection.read(file, coded) {
      coded.layerSelection = selection
      notes.append(
        "item \(id): a1op/lsel select operating point \(selection.operatingPoint)"
          + (selection.layer.map { ", layer \($0)" } ?? "")
          + " (idc 0x\(String(selection.idc, radix: 16))), given to libheif as operating point 0")
    }
    if let ispe = coded.ispe, let sequence = coded.hevc?.sequence, ispe != sequence.size {
      notes.append(
        "item \(id): ispe \(ispe) differs from the coded size \(sequence.size); the coded size is used")
    }
    return coded
  }

  /// A `grid` item: its rows, columns and output size, and its tiles in `dimg` order, which
  /// must all have one size that covers the output.
  static func gridPlan(_ file: HEIFFile, _ id: UInt32, limits: Limits, notes: inout [String])
    throws(HEIFRefusal) -> ImageGrid
  {
    guard let payload = file.itemBytes(id, limit: 12) else {
      throw HEIFRefusal(.corrupt, "the grid item \(id) has no readable data")
    }
    let header = payload.withUnsafeBytes { payload -> (rows: UInt8, columns: UInt8, UInt64, UInt64)? in
      let r = ByteReader(payload)
      guard let version = r.u8(0), version == 0, let flags = r.u8(1), let rowsMinus1 = r.u8(2),
        let columnsMinus1 = r.u8(3)
      else { return nil }
      let fieldSize = flags & 1 == 1 ? 4 : 2
      guard let width = r.uint(4, size: fieldSize), let height = r.uint(4 + fieldSize, size: fieldSize) else {
        return nil
      }
      return (rowsMinus1, columnsMinus1, width, height)
    }
    guard let (rowsMinus1, columnsMinus1, width, height) = header else {
      throw HEIFRefusal(.corrupt, "the grid item \(id) is malformed")
    }
    let rows = Int(rowsMinus1) + 1
    let columns = Int(columnsMinus1) + 1
    let output = HEIFSize(width: Int(width), height: Int(height))
    guard output.width > 0, output.height > 0 else { throw HEIFRefusal(.corrupt, "the grid is \(output)") }
    if rows * columns > limits.maxHEIFTiles {
      throw HEIFRefusal(
        .tooManyItems, "the HEIF grid has \(rows * columns) tiles (limit \(limits.maxHEIFTiles))")
    }
    let tileIDs = file.references(FourCC("dimg"), from: id)
    guard tileIDs.count == rows * columns else {
      throw HEIFRefusal(.corrupt, "the \(rows)x\(columns) grid has \(tileIDs.count) tiles")
    }
    var tiles: [HEIFCodedItem] = []
    tiles.reserveCapacity(tileIDs.count)
    for tileID in tileIDs {
      guard let type = file.items[tileID]?.type else {
        throw HEIFRefusal(.corrupt, "grid tile \(tileID) does not exist")
      }
      guard type != FourCC("grid"), type != FourCC("iden"), type != FourCC("iovl"), tileID != id else {
        throw HEIFRefusal(.unsupported, "grid tiles that are derived images (\(type)) are not supported")
      }
      guard libheifImageTypes.contains(type) else {
        throw HEIFRefusal(.unsupported, "grid tiles coded as \(type) are not supported")
      }
      tiles.append(try codedItem(file, tileID, notes: &notes))
    }
    // Every tile must decode to the same size, and the tiles must cover the output: a tile of
    // another size would be stretched or leave a gap.
    let tileSize = tiles[0].expectedSize
    for tile in tiles {
      if tile.expectedSize != tileSize {
        throw HEIFRefusal(
          .corrupt, "grid tile \(tile.itemID) is \(tile.expectedSize), not \(tileSize) like the first")
      }
      if let ispe = tile.ispe, let coded = tile.hevc?.sequence?.size, ispe != coded {
        throw HEIFRefusal(.corrupt, "grid tile \(tile.itemID) is coded as \(coded) but declares \(ispe)")
      }
    }
    guard tileSize.width > 0, tileSize.height > 0, tileSize.width * columns >= output.width,
      tileSize.height * rows >= output.height
    else {
      throw HEIFRefusal(
        .corrupt, "\(rows)x\(columns) tiles of \(tileSize) do not cover the grid's \(output)")
    }
    if tileSize.width * (columns - 1) >= output.width || tileSize.height * (rows - 1) >= output.height {
      notes.append("the grid has tiles wholly outside its output size")
    }
    let first = tiles[0].hevc.map { Array(file.reader.bytes[$0.record]) }
    let shares = tiles.allSatisfy { tile in tile.hevc.map { Array(file.reader.bytes[$0.record]) } == first }
    return ImageGrid(
      rows: rows, columns: columns, outputSize: output, tiles: tiles, tileSize: tileSize,
      sharesConfiguration: shares)
  }
}
