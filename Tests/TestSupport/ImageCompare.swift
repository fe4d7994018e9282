import Foundation

/// Pixel comparisons shared by the image test targets.
public enum ImageCompare {
  /// Peak signal-to-noise ratio in dB of two 8-bit sample arrays of the same length.
  public static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
    precondition(a.count == b.count && !a.isEmpty, "psnr: different or empty sample arrays")
    var squared = 0.0
    for (x, y) in zip(a, b) {
      let d = Double(x) - Double(y)
      squared += d * d
    }
    let mse = squared / Double(a.count)
    return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
  }
}
