import ImageContainers

/// The layer a layered AVIF item shows, and how libheif 1.15 is made to decode that layer.
///
/// An AV1 item can hold several spatial layers (a small base picture and larger ones predicted
/// from it). Its `a1op` property picks an operating point (a set of layers, from the sequence
/// header), its `lsel` property a layer within it; without either, a reader shows operating
/// point 0's highest layer. The item's `ispe` is the size of the picture selected. libheif 1.15
/// reads neither property and always decodes operating point 0, so a file whose `a1op` selects
/// a smaller layer came out at the larger size (and was refused: it did not match `ispe`).
///
/// A decoder chooses operating point 0 unless told otherwise and drops every OBU outside the
/// layers its `operating_point_idc` names (AV1 §7.5, §6.2.1); it then shows the highest spatial
/// layer of that set (libavif, dav1d, libaom). So in libheif's copy of the file the selected
/// layers are written as operating point 0's idc, in every sequence header of the item (its
/// `av1C` and its data): 12 bits in place, nothing moves, nothing is re-encoded.
struct AV1LayerSelection: Sendable, Equatable {
  /// One byte of the input to overwrite.
  struct Write: Sendable, Equatable {
    var offset: Int
    var byte: UInt8
  }

  /// The `a1op` operating point, 0 without one.
  var operatingPoint: Int
  /// The `lsel` layer, nil without one (or 0xFFFF: any layer).
  var layer: Int?
  /// The idc written as operating point 0's.
  var idc: Int
  /// The bytes that do it, in the input; empty when operating point 0 already is the selection.
  var writes: [Write]

  /// The selection of AV1 `item` (with `a1op` and/or `lsel`), or nil when it has neither or is
  /// not AV1. Refuses an `a1op` past the stream's operating points and an `lsel` layer outside
  /// the chosen one.
  static func read(_ file: HEIFFile, _ item: HEIFCodedItem) throws(HEIFRefusal) -> AV1LayerSelection? {
    guard let av1 = item.av1 else { return nil }
    let r = file.reader
    let operatingPoint = file.properties.first(FourCC("a1op"), of: item.itemID).flatMap { r.u8($0.body) }
    let layer = file.properties.first(FourCC("lsel"), of: item.itemID).flatMap { r.u16($0.body) }
      .flatMap { $0 == 0xFFFF ? nil : Int($0) }
    guard operatingPoint != nil || layer != nil else { return nil }
    // Every sequence header: the record's, then the data's (payload ranges in the input).
    var headers: [Range<Int>] = []
    let config = UnsafeRawBufferPointer(rebasing: r.bytes[av1.configOBUs])
    headers += (AV1OBUs.sequenceHeaders(in: config) ?? []).map { $0.shifted(by: av1.configOBUs.lowerBound) }
    let inData = item.withBytes(in: r.bytes) { AV1OBUs.sequenceHeaders(in: $0) ?? [] }
    headers += inData.map { item.inputRange(ofDataRange: $0) }.compactMap { $0 }
    guard let first = headers.first,
      let sequence = AV1SequenceHeader.read(UnsafeRawBufferPointer(rebasing: r.bytes[first]))
    else {
      throw HEIFRefusal(.corrupt, "the layered AV1 item \(item.itemID) has no readable sequence header")
    }
    let chosen = Int(operatingPoint ?? 0)
    guard chosen < sequence.operatingPointIDCs.count else {
      throw HEIFRefusal(
        .corrupt,
        "a1op selects operating point \(chosen); the AV1 stream has \(sequence.operatingPointIDCs.count)")
    }
    var idc = sequence.operatingPointIDCs[chosen]
    if let layer {
      // lsel names one spatial layer of the operating point (an idc of 0 holds every layer); the
      // decoder is given the layers up to it.
      let spatial = idc == 0 ? 0xF : idc >> 8
      guard layer <= 3, (spatial >> layer) & 1 == 1 else {
        throw HEIFRefusal(
          .corrupt, "lsel selects layer \(layer), which operating point \(chosen) does not hold")
      }
      idc = (spatial & ((2 << layer) - 1)) << 8 | (idc == 0 ? 0xFF : idc & 0xFF)
    }
    var selection = AV1LayerSelection(operatingPoint: chosen, layer: layer, idc: idc, writes: [])
    guard idc != sequence.operatingPointIDCs[0] else { return selection }
    for header in headers {
      guard let bit = AV1SequenceHeader.read(UnsafeRawBufferPointer(rebasing: r.bytes[header]))?.firstIDCBit
      else { continue }
      selection.writes += writes(idc, atBit: bit, of: header, in: r.bytes)
    }
    return selection
  }

  /// The bytes that hold `value` (12 bits) from bit `bit` of the payload at `payload`, rewritten.
  private static func writes(
    _ value: Int, atBit bit: Int, of payload: Range<Int>, in bytes: UnsafeRawBufferPointer
  ) -> [Write] {
    let first = payload.lowerBound + bit / 8
    let last = payload.lowerBound + (bit + 11) / 8
    return (first...last).map { offset in
      var byte = bytes[offset]
      for i in 0..<12 where payload.lowerBound + (bit + i) / 8 == offset {
        let mask = UInt8(0x80) >> UInt8((bit + i) % 8)
        byte = (value >> (11 - i)) & 1 == 1 ? byte | mask : byte & ~mask
      }
      return Write(offset: offset, byte: byte)
    }
  }
}

extension Range where Bound == Int {
  fileprivate func shifted(by offset: Int) -> Range<Int> { (lowerBound + offset)..<(upperBound + offset) }
}

extension HEIFCodedItem {
  /// Where `range` of the item's data (as `withBytes` lends it) lies in the input; nil when it
  /// spans two extents (a sequence header never does in practice, and is then left alone).
  func inputRange(ofDataRange range: Range<Int>) -> Range<Int>? {
    var start = 0
    for extent in data {
      if range.lowerBound >= start, range.upperBound <= start + extent.count {
        let base = extent.lowerBound - start
        return (range.lowerBound + base)..<(range.upperBound + base)
      }
      start += extent.count
    }
    return nil
  }
}
