/// Writes small GIFs in test code. The LZW stream uses only literal codes (a clear code after
/// every two literals keeps the code width at 3 bits), so what each fixture holds is exact.
enum GIFWriter {
  /// A GIF with a 4-colour global palette and one frame of palette `indices` (frame-sized rows,
  /// stored in interlaced row order when `interlaced`).
  static func gif(
    screen: (Int, Int), frame: (left: Int, top: Int, width: Int, height: Int), indices: [UInt8],
    palette: [UInt8], transparentIndex: UInt8? = nil, interlaced: Bool = false
  ) -> [UInt8] {
    precondition(palette.count == 12 && indices.count == frame.width * frame.height)
    var out = Array("GIF89a".utf8)
    out += le16(screen.0) + le16(screen.1) + [0xF1, 0, 0]  // global table of 4 colours
    out += palette
    if let transparentIndex { out += [0x21, 0xF9, 4, 1, 0, 0, transparentIndex, 0] }
    out += [0x2C] + le16(frame.left) + le16(frame.top) + le16(frame.width) + le16(frame.height)
    out += [interlaced ? 0x40 : 0]
    var rows = Array(0..<frame.height)
    if interlaced {
      rows = [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap {
        Array(stride(from: $0.0, to: frame.height, by: $0.1))
      }
    }
    let ordered = rows.flatMap { indices[($0 * frame.width)..<(($0 + 1) * frame.width)] }
    out += [2] + subBlocks(lzw(ordered)) + [0x3B]
    return out
  }

  private static func lzw(_ indices: [UInt8]) -> [UInt8] {
    var codes: [Int] = []
    for (n, index) in indices.enumerated() {
      if n % 2 == 0 { codes.append(4) }  // clear
      codes.append(Int(index))
    }
    codes.append(5)  // end of information
    var bytes: [UInt8] = []
    var (accumulator, bits) = (0, 0)
    for code in codes {
      accumulator |= code << bits
      bits += 3
      while bits >= 8 {
        bytes.append(UInt8(accumulator & 0xFF))
        accumulator >>= 8
        bits -= 8
      }
    }
    if bits > 0 { bytes.append(UInt8(accumulator & 0xFF)) }
    return bytes
  }

  private static func subBlocks(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var i = 0
    while i < data.count {
      let n = min(255, data.count - i)
      out += [UInt8(n)] + data[i..<i + n]
      i += n
    }
    return out + [0]
  }

  private static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
}
