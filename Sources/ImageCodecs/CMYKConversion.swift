/// CMYK (as TurboJPEG returns it, four bytes per pixel) to RGB.
enum CMYKConversion {
  /// Converts through `profile` when it is a usable CMYK ICC profile, else by the naive formula
  /// R = (1 − C)(1 − K) … . `inverted`: the samples are Adobe-style inverted (255 = no ink).
  static func toRGB(_ cmyk: PixelBuffer, inverted: Bool, profile: [UInt8]?) throws -> PixelBuffer {
    precondition(cmyk.layout == .rgba && cmyk.rowBytes == cmyk.width * 4)
    if let profile {
      let key = TransformKey.cmyk(profile: profile, inverted: inverted)
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
        var c = Int(p[4 * i])
        var m = Int(p[4 * i + 1])
        var y = Int(p[4 * i + 2])
        var k = Int(p[4 * i + 3])
        if !inverted {
          (c, m, y, k) = (255 - c, 255 - m, 255 - y, 255 - k)
        }
        // Now each value is "1 − ink" scaled to 255.
        p[3 * i] = UInt8((c * k + 127) / 255)
        p[3 * i + 1] = UInt8((m * k + 127) / 255)
        p[3 * i + 2] = UInt8((y * k + 127) / 255)
      }
    }
    bytes.removeLast(bytes.count - pixels * 3)
    return PixelBuffer(width: cmyk.width, height: cmyk.height, layout: .rgb, bytes: bytes)
  }
}
