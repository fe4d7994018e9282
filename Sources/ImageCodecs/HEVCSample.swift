/// Checks the framing of an HEVC sample as HEIF stores it: NAL units, each preceded by its
/// length in `lengthSize` big-endian bytes, filling the sample exactly. libavcodec checks this
/// too, but here a cut-off sample is told apart (`.truncated`) from a damaged one (`.corrupt`),
/// and a sample with no picture at all never reaches the decoder.
///
/// Every slice must belong to an intra random access point picture (IDR, CRA, BLA): a HEIF
/// image item is decoded on its own, and libavcodec decodes a picture whose references are
/// missing against made-up grey ones without flagging it (FFmpeg 5.1, seen with a P picture).
enum HEVCSample {
  static func check(_ sample: UnsafeRawBufferPointer, lengthSize: Int) throws {
    guard !sample.isEmpty else { throw CodecError(.truncated, codec: HEVCDecoder.codec, "empty sample") }
    var offset = 0
    var slices = 0
    while offset < sample.count {
      guard sample.count - offset >= lengthSize else {
        throw CodecError(.truncated, codec: HEVCDecoder.codec, "NAL length cut off at byte \(offset)")
      }
      var length = 0
      for byte in sample[offset..<offset + lengthSize] { length = length << 8 | Int(byte) }
      offset += lengthSize
      // Two bytes of NAL unit header at least.
      guard length >= 2 else {
        throw CodecError(.corrupt, codec: HEVCDecoder.codec, "NAL unit of \(length) bytes at byte \(offset)")
      }
      guard length <= sample.count - offset else {
        throw CodecError(
          .truncated, codec: HEVCDecoder.codec,
          "NAL unit of \(length) bytes at byte \(offset), \(sample.count - offset) left")
      }
      let header = sample[offset]
      guard header & 0x80 == 0 else {
        throw CodecError(.corrupt, codec: HEVCDecoder.codec, "forbidden_zero_bit set at byte \(offset)")
      }
      // Types 0…31 are coded slice segments (VCL); the rest are parameter sets, SEI and such.
      let type = header >> 1
      switch type {
      case 16...21: slices += 1  // BLA, IDR, CRA
      case 0...15:
        throw CodecError(
          .unsupported, codec: HEVCDecoder.codec, "NAL type \(type): a picture predicted from others")
      case 22...31: throw CodecError(.corrupt, codec: HEVCDecoder.codec, "reserved NAL type \(type)")
      default: break
      }
      offset += length
    }
    guard slices > 0 else {
      throw CodecError(.corrupt, codec: HEVCDecoder.codec, "the sample holds no slice")
    }
  }
}
