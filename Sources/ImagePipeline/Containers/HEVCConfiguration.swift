import ImageContainers

/// An `hvcC` box (HEVCDecoderConfigurationRecord, ISO/IEC 14496-15 §8.3.3): the raw record
/// as a byte range of the input (libavcodec takes it as extradata as it is) and the fields the
/// path rule checks, plus the first SPS's coded size.
public struct HEVCConfiguration: Sendable, Equatable {
  /// One array of parameter-set NAL units (VPS 32, SPS 33, PPS 34, SEI 39/40).
  public struct NALArray: Sendable, Equatable {
    public var type: Int
    /// Each unit's bytes in the input (without its 16-bit length field).
    public var units: [Range<Int>]
  }

  /// The record (the box payload) in the input.
  public var record: Range<Int>
  public var profileIDC: Int
  public var levelIDC: Int
  /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
  public var chromaFormat: Int
  public var bitDepthLuma: Int
  public var bitDepthChroma: Int
  /// Bytes of each NAL unit's length prefix in the item data (1, 2 or 4).
  public var lengthSize: Int
  public var nalArrays: [NALArray]
  /// The first SPS, when it could be read.
  public var sequence: HEVCSequence?

  /// Whether the arrays hold a VPS, an SPS and a PPS (what a decoder needs before the slices).
  public var hasParameterSets: Bool {
    let types = Set(nalArrays.filter { !$0.units.isEmpty }.map(\.type))
    return types.isSuperset(of: [32, 33, 34])
  }

  /// Most NAL units read from one record: real ones hold three to five.
  static let maxUnits = 64

  /// Reads the record in `[start, end)` of `r`; nil with a reason when it is malformed.
  static func read(_ r: ByteReader, from start: Int, to end: Int) -> Result<HEVCConfiguration, Problem> {
    let b = ByteReader(r.bytes, limit: end)
    guard b.has(start, 23), let version = b.u8(start), version == 1 else {
      return .failure(Problem("hvcC is shorter than its fixed fields or not version 1"))
    }
    let profile = Int(b.u8(start + 1)! & 0x1F)
    let level = Int(b.u8(start + 12)!)
    let chroma = Int(b.u8(start + 16)! & 0x03)
    let lumaDepth = Int(b.u8(start + 17)! & 0x07) + 8
    let chromaDepth = Int(b.u8(start + 18)! & 0x07) + 8
    let lengthSize = Int(b.u8(start + 21)! & 0x03) + 1
    guard lengthSize != 3 else { return .failure(Problem("hvcC NAL length size 3")) }
    let arrayCount = Int(b.u8(start + 22)!)
    var p = start + 23
    var arrays: [NALArray] = []
    var unitCount = 0
    for _ in 0..<arrayCount {
      guard let header = b.u8(p), let count = b.u16(p + 1) else {
        return .failure(Problem("hvcC NAL array runs past the box"))
      }
      p += 3
      var array = NALArray(type: Int(header & 0x3F), units: [])
      for _ in 0..<Int(count) {
        unitCount += 1
        guard unitCount <= maxUnits else { return .failure(Problem("hvcC holds over \(maxUnits) NAL units")) }
        guard let length = b.u16(p), b.has(p + 2, Int(length)) else {
          return .failure(Problem("hvcC NAL unit runs past the box"))
        }
        if length > 0 { array.units.append((p + 2)..<(p + 2 + Int(length))) }
        p += 2 + Int(length)
      }
      arrays.append(array)
    }
    var configuration = HEVCConfiguration(
      record: start..<end, profileIDC: profile, levelIDC: level, chromaFormat: chroma,
      bitDepthLuma: lumaDepth, bitDepthChroma: chromaDepth, lengthSize: lengthSize, nalArrays: arrays,
      sequence: nil)
    if let sps = arrays.first(where: { $0.type == 33 })?.units.first {
      configuration.sequence = HEVCSequence.read(Array(r.bytes[sps]))
    }
    return .success(configuration)
  }

  /// Why a record could not be read.
  struct Problem: Error, Equatable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
  }
}

/// What an HEVC sequence parameter set (ITU-T H.265 §7.3.2.2) says about the frames it codes.
public struct HEVCSequence: Sendable, Equatable {
  public var chromaFormat: Int
  public var bitDepthLuma: Int
  public var bitDepthChroma: Int
  /// The coded picture size.
  public var codedWidth: Int
  public var codedHeight: Int
  /// The size a decoder outputs: the coded size less the conformance window.
  public var size: HEIFSize

  /// Reads an SPS NAL unit (with its 2-byte header and emulation-prevention bytes); nil when it is
  /// malformed or uses a syntax this reader does not follow.
  static func read(_ nal: [UInt8]) -> HEVCSequence? {
    guard nal.count > 3, (nal[0] >> 1) & 0x3F == 33 else { return nil }
    var bits = RBSPBitReader(nal, from: 2)
    _ = bits.read(4)  // sps_video_parameter_set_id
    guard let maxSubLayersMinus1 = bits.read(3) else { return nil }
    _ = bits.read(1)  // sps_temporal_id_nesting_flag
    // profile_tier_level(1, maxSubLayersMinus1): 88 bits of general profile, 8 of level.
    guard bits.skip(96) else { return nil }
    var subLayerProfile: [Bool] = []
    var subLayerLevel: [Bool] = []
    for _ in 0..<maxSubLayersMinus1 {
      guard let profile = bits.read(1), let level = bits.read(1) else { return nil }
      subLayerProfile.append(profile == 1)
      subLayerLevel.append(level == 1)
    }
    if maxSubLayersMinus1 > 0 { guard bits.skip(2 * (8 - Int(maxSubLayersMinus1))) else { return nil } }
    for i in 0..<Int(maxSubLayersMinus1) {
      if subLayerProfile[i] { guard bits.skip(88) else { return nil } }
      if subLayerLevel[i] { guard bits.skip(8) else { return nil } }
    }
    guard bits.readUE() != nil, let chroma = bits.readUE(), chroma <= 3 else { return nil }
    var separateColourPlanes = false
    if chroma == 3 {
      guard let flag = bits.read(1) else { return nil }
      separateColourPlanes = flag == 1
    }
    guard let width = bits.readUE(), let height = bits.readUE(), width > 0, height > 0,
      width <= 1 << 16, height <= 1 << 16, let window = bits.read(1)
    else { return nil }
    var crop = (left: 0, right: 0, top: 0, bottom: 0)
    if window == 1 {
      guard let l = bits.readUE(), let r = bits.readUE(), let t = bits.readUE(), let b = bits.readUE() else {
        return nil
      }
      crop = (l, r, t, b)
    }
    guard let lumaMinus8 = bits.readUE(), let chromaMinus8 = bits.readUE(), lumaMinus8 <= 8, chromaMinus8 <= 8
    else { return nil }
    // Conformance window offsets count chroma samples (H.265 Table 6-1).
    let effectiveChroma = separateColourPlanes ? 0 : chroma
    let subWidth = effectiveChroma == 1 || effectiveChroma == 2 ? 2 : 1
    let subHeight = effectiveChroma == 1 ? 2 : 1
    let outWidth = width - subWidth * (crop.left + crop.right)
    let outHeight = height - subHeight * (crop.top + crop.bottom)
    guard outWidth > 0, outHeight > 0 else { return nil }
    return HEVCSequence(
      chromaFormat: chroma, bitDepthLuma: lumaMinus8 + 8, bitDepthChroma: chromaMinus8 + 8, codedWidth: width,
      codedHeight: height, size: HEIFSize(width: outWidth, height: outHeight))
  }
}

/// Reads bits MSB first from a NAL unit's payload, dropping emulation-prevention bytes
/// (`00 00 03` → `00 00`).
struct RBSPBitReader {
  private let bytes: [UInt8]
  private var index: Int
  private var bit = 0
  private var zeros = 0
  private var current: UInt8 = 0
  private var loaded = false

  init(_ bytes: [UInt8], from start: Int) {
    self.bytes = bytes
    index = start
  }

  private mutating func nextByte() -> UInt8? {
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      if zeros >= 2 && byte == 3 {
        zeros = 0
        continue
      }
      zeros = byte == 0 ? zeros + 1 : 0
      return byte
    }
    return nil
  }

  /// The next `count` (≤ 32) bits, or nil at the end.
  mutating func read(_ count: Int) -> Int? {
    var value = 0
    for _ in 0..<count {
      if !loaded || bit == 8 {
        guard let byte = nextByte() else { return nil }
        current = byte
        bit = 0
        loaded = true
      }
      value = value << 1 | Int((current >> (7 - bit)) & 1)
      bit += 1
    }
    return value
  }

  mutating func skip(_ count: Int) -> Bool {
    var left = count
    while left > 0 {
      let step = min(left, 32)
      guard read(step) != nil else { return false }
      left -= step
    }
    return true
  }

  /// An unsigned Exp-Golomb value (ue(v)); nil past the end or above 2^31.
  mutating func readUE() -> Int? {
    var leadingZeros = 0
    while true {
      guard let b = read(1) else { return nil }
      if b == 1 { break }
      leadingZeros += 1
      if leadingZeros > 31 { return nil }
    }
    guard let rest = read(leadingZeros) else { return nil }
    return (1 << leadingZeros) - 1 + rest
  }
}
