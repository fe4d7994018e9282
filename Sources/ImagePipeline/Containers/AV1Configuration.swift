import ImageContainers

/// An `av1C` box (AV1CodecConfigurationRecord, AV1-ISOBMFF §2.3): the stream's profile, bit depth
/// and chroma layout, read without decoding. `monochrome` is what the decoders are told (libheif
/// 1.15 leaves a monochrome plane in video range; see `HEIFCodec.Options.monochrome`).
public struct AV1Configuration: Sendable, Equatable {
  public var profile: Int
  /// 8, 10 or 12.
  public var bitDepth: Int
  /// One plane: the sequence header's `mono_chrome`.
  public var monochrome: Bool
  /// The `configOBUs` after the four fixed bytes, in the input (a sequence header, when present).
  public var configOBUs: Range<Int>

  /// Reads the record in `[start, end)` of `r`; nil when it is shorter than its fixed fields or
  /// not version 1.
  static func read(_ r: ByteReader, from start: Int, to end: Int) -> AV1Configuration? {
    let b = ByteReader(r.bytes, limit: end)
    guard b.has(start, 4), let marker = b.u8(start), marker == 0x81, let first = b.u8(start + 1),
      let flags = b.u8(start + 2)
    else { return nil }
    let high = flags & 0x40 != 0
    let twelve = flags & 0x20 != 0
    return AV1Configuration(
      profile: Int(first >> 5), bitDepth: twelve ? 12 : high ? 10 : 8, monochrome: flags & 0x10 != 0,
      configOBUs: (start + 4)..<end)
  }
}

/// The low-overhead OBUs of an AV1 stream (AV1 §5.3, each with `obu_has_size_field`, as AVIF
/// requires): the sequence headers among them, for the layer selection.
enum AV1OBUs {
  /// OBU_SEQUENCE_HEADER.
  static let sequenceHeader = 1

  /// The payload ranges of the sequence header OBUs in `bytes`, in order; nil when an OBU has no
  /// size field or runs past the end (the walk cannot continue).
  static func sequenceHeaders(in bytes: UnsafeRawBufferPointer) -> [Range<Int>]? {
    var found: [Range<Int>] = []
    var offset = 0
    while offset < bytes.count {
      let header = bytes[offset]
      let type = Int(header >> 3) & 0x0F
      let hasExtension = header & 0x04 != 0
      guard header & 0x02 != 0 else { return nil }
      var p = offset + 1 + (hasExtension ? 1 : 0)
      // leb128 obu_size: at most 8 bytes.
      var size = 0
      for k in 0..<8 {
        guard p < bytes.count else { return nil }
        let byte = bytes[p]
        p += 1
        size |= Int(byte & 0x7F) << (7 * k)
        if byte & 0x80 == 0 { break }
        if k == 7 { return nil }
      }
      guard size <= bytes.count - p else { return nil }
      if type == sequenceHeader { found.append(p..<(p + size)) }
      offset = p + size
    }
    return found
  }
}

/// The operating points of an AV1 sequence header (AV1 §5.5.1): which temporal and spatial layers
/// each decodes (`operating_point_idc`: temporal layers in bits 0–7, spatial in bits 8–11; 0 for
/// a stream without scalability information), and where operating point 0's idc lies.
struct AV1SequenceHeader: Equatable {
  var operatingPointIDCs: [Int]
  /// The bit offset of `operating_point_idc[0]` (12 bits) in the payload; nil for a reduced
  /// still-picture header, which has no operating point fields.
  var firstIDCBit: Int?

  /// Reads the fields up to the operating points; nil when the payload ends first.
  static func read(_ payload: UnsafeRawBufferPointer) -> AV1SequenceHeader? {
    var bits = AV1BitReader(payload)
    guard bits.skip(4), let reduced = bits.read(1) else { return nil }  // seq_profile, still_picture
    if reduced == 1 { return AV1SequenceHeader(operatingPointIDCs: [0], firstIDCBit: nil) }
    guard let timingInfo = bits.read(1) else { return nil }
    var decoderModel = 0
    var delayLength = 0
    if timingInfo == 1 {
      guard bits.skip(64), let equalInterval = bits.read(1) else { return nil }
      if equalInterval == 1 { guard bits.skipUVLC() else { return nil } }
      guard let model = bits.read(1) else { return nil }
      decoderModel = model
      if model == 1 {
        guard let length = bits.read(5), bits.skip(42) else { return nil }
        delayLength = length + 1
      }
    }
    guard let initialDelay = bits.read(1), let countMinus1 = bits.read(5) else { return nil }
    var header = AV1SequenceHeader(operatingPointIDCs: [], firstIDCBit: bits.position)
    for _ in 0...countMinus1 {
      guard let idc = bits.read(12), let level = bits.read(5) else { return nil }
      header.operatingPointIDCs.append(idc)
      if level > 7 { guard bits.skip(1) else { return nil } }  // seq_tier
      if decoderModel == 1 {
        guard let present = bits.read(1) else { return nil }
        if present == 1 { guard bits.skip(2 * delayLength + 1) else { return nil } }
      }
      if initialDelay == 1 {
        guard let present = bits.read(1) else { return nil }
        if present == 1 { guard bits.skip(4) else { return nil } }
      }
    }
    return header
  }
}

/// Reads bits MSB first (AV1 has no emulation prevention), counting its position.
struct AV1BitReader {
  private let bytes: UnsafeRawBufferPointer
  /// Bits read so far.
  private(set) var position = 0

  init(_ bytes: UnsafeRawBufferPointer) {
    self.bytes = bytes
  }

  /// The next `count` (≤ 32) bits, or nil past the end.
  mutating func read(_ count: Int) -> Int? {
    guard position + count <= bytes.count * 8 else { return nil }
    var value = 0
    for _ in 0..<count {
      value = value << 1 | Int(bytes[position >> 3] >> (7 - UInt8(position & 7))) & 1
      position += 1
    }
    return value
  }

  mutating func skip(_ count: Int) -> Bool {
    guard position + count <= bytes.count * 8 else { return false }
    position += count
    return true
  }

  /// Skips a uvlc() value (AV1 §4.10.3).
  mutating func skipUVLC() -> Bool {
    var zeros = 0
    while true {
      guard let bit = read(1) else { return false }
      if bit == 1 { break }
      zeros += 1
      if zeros >= 32 { return true }  // the value is capped; nothing follows in the code
    }
    return skip(zeros)
  }
}
