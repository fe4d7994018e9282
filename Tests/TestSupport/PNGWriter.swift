/// Writes minimal PNGs in test code: stored (uncompressed) deflate blocks, so no zlib is needed.
/// Fixtures made this way state exactly what they hold.
public enum PNGWriter {
  /// An 8- or 16-bit PNG of `colourType` (0 gray, 2 RGB, 4 gray+alpha, 6 RGBA) from tightly packed rows
  /// (16-bit samples big-endian).
  /// `idatLimit` cuts the zlib stream to that many bytes (a damaged file with a valid structure).
  public static func png(
    width: Int, height: Int, colourType: UInt8, pixels: [UInt8], bitDepth: UInt8 = 8,
    extraChunks: [(String, [UInt8])] = [], idatLimit: Int? = nil
  ) -> [UInt8] {
    let channels = [2: 3, 4: 2, 6: 4][colourType, default: 1] * Int(bitDepth / 8)
    var raw: [UInt8] = []
    for y in 0..<height {
      raw.append(0)  // filter type None
      raw.append(contentsOf: pixels[(y * width * channels)..<((y + 1) * width * channels)])
    }
    var zlib: [UInt8] = [0x78, 0x01]
    var offset = 0
    repeat {
      let n = min(65_535, raw.count - offset)
      let final: UInt8 = offset + n == raw.count ? 1 : 0
      zlib += [final, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
      zlib += raw[offset..<offset + n]
      offset += n
    } while offset < raw.count
    zlib += bigEndian(adler32(raw))
    if let idatLimit { zlib = Array(zlib.prefix(idatLimit)) }
    var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    let ihdr = bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [bitDepth, colourType, 0, 0, 0]
    out += chunk("IHDR", ihdr)
    for (type, data) in extraChunks { out += chunk(type, data) }
    out += chunk("IDAT", zlib)
    out += chunk("IEND", [])
    return out
  }

  public static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
    let typed = Array(type.utf8) + data
    return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
  }

  public static func bigEndian(_ v: UInt32) -> [UInt8] {
    [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
  }

  public static func adler32(_ data: [UInt8]) -> UInt32 {
    var (a, b): (UInt32, UInt32) = (1, 0)
    for byte in data {
      a = (a + UInt32(byte)) % 65_521
      b = (b + a) % 65_521
    }
    return b << 16 | a
  }

  public static func crc32(_ data: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in data {
      crc ^= UInt32(byte)
      for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
  }
}
