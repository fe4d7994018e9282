/// CMYK (as TurboJPEG returns it, four bytes per pixel) to RGB.
///
/// The samples are taken as Adobe-inverted (255 = no ink) whether or not the file has an Adobe
/// APP14 marker. Photoshop writes CMYK that way, every libjpeg-based writer adds the marker, and
/// Chromium, Firefox and Pillow all read CMYK as inverted without looking for it; read as plain
/// ink, a CMYK file whose marker was stripped came out as its negative (4.8 dB).
enum CMYKConversion {
  /// Converts through `profile` when it is a usable CMYK ICC profile, else by the naive formula
  /// R = (1 − C)(1 − K) … .
  static func toRGB(_ cmyk: PixelBuffer, profile: [UInt8]?) throws -> PixelBuffer {
    precondition(cmyk.layout == .rgba && cmyk.rowBytes == cmyk.width * 4)
    if let profile {
      let key = TransformKey.cmyk(profile: profile, inverted: true)
      if case .success(let transform) = ColourTransform.cachedTransform(key, build: { LCMSProfile(profile) })
      {
        return cmyk.bytes.withUnsafeBytes {
          transform.apply(
            $0, width: cmyk.width, height: cmyk.height, sourceRowBytes: cmyk.rowBytes, layout: .rgb)
        }
      }
    }
    var bytes = cmyk.bytes
    let pixels = cmyk.width * cmyk.height
    bytes.withUnsafeMutableBufferPointer { p in
      // Forward in place: pixel i's 3 output bytes never overrun pixel i's 4 input bytes.
      for i in 0..<pixels {
        // Each value is "1 − ink" scaled to 255.
        let c = Int(p[4 * i])
        let m = Int(p[4 * i + 1])
        let y = Int(p[4 * i + 2])
        let k = Int(p[4 * i + 3])
        p[3 * i] = UInt8((c * k + 127) / 255)
        p[3 * i + 1] = UInt8((m * k + 127) / 255)
        p[3 * i + 2] = UInt8((y * k + 127) / 255)
      }
    }
    bytes.removeLast(bytes.count - pixels * 3)
    return PixelBuffer(width: cmyk.width, height: cmyk.height, layout: .rgb, bytes: bytes)
  }
}
