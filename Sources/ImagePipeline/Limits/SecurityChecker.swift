/// The checks made before decoding, in a fixed order (as imgproxy's `security/checker.go`):
/// input bytes first (before even sniffing), then what the headers declare.
public enum SecurityChecker {
  /// Input size: the first check, on the raw upload.
  public static func checkBytes(_ count: Int, limits: Limits) throws(PipelineError) {
    if count == 0 { throw .empty() }
    if count > limits.maxInputBytes {
      throw PipelineError(
        .tooLargeBytes, "the upload has \(count) bytes, more than the limit of \(limits.maxInputBytes)")
    }
  }

  /// Declared dimensions, pixel count and per-format structure limits.
  public static func checkHeader(_ header: ImageHeader, limits: Limits) throws(PipelineError) {
    try checkSize(width: header.width, height: header.height, limits: limits)
    switch header.container {
    case .jpeg(let info):
      if info.precision != 8 {
        throw PipelineError(
          .unsupportedJPEGPrecision, "\(info.precision)-bit JPEG cannot be decoded (8-bit only)")
      }
      if info.isLossless || info.isHierarchical {
        throw PipelineError(.unsupportedFormat, "lossless and hierarchical JPEG are not supported")
      }
    case .heif(let info):
      if info.itemCount > limits.maxHEIFItems {
        throw PipelineError(
          .tooManyItems, "the HEIF file has \(info.itemCount) items (limit \(limits.maxHEIFItems))")
      }
      if info.tileCount > limits.maxHEIFTiles {
        throw PipelineError(
          .tooManyItems, "the HEIF grid has \(info.tileCount) tiles (limit \(limits.maxHEIFTiles))")
      }
      if let clap = info.cleanAperture {
        try checkSize(width: clap.width, height: clap.height, limits: limits)
      }
    case .gif(let info):
      guard let frame = info.firstFrame else { throw .truncated("the GIF has no image") }
      try checkSize(width: frame.width, height: frame.height, limits: limits)
      if !info.firstFrameFitsScreen {
        throw .corrupt(
          "the GIF frame (\(frame.width)x\(frame.height) at \(frame.left),\(frame.top)) lies outside its screen"
        )
      }
    case .png(let info):
      if info.textBytes > limits.maxPNGTextBytes {
        throw PipelineError(
          .metadataTooLarge,
          "the PNG text chunks hold \(info.textBytes) bytes (limit \(limits.maxPNGTextBytes))")
      }
      if !info.hasIDAT { throw .truncated("the PNG has no image data") }
    case .webp:
      break
    }
  }

  static func checkSize(width: Int, height: Int, limits: Limits) throws(PipelineError) {
    guard width > 0, height > 0 else { throw .corrupt("the image declares a size of \(width)x\(height)") }
    if width > limits.maxDimension || height > limits.maxDimension {
      throw PipelineError(
        .dimensionLimit, "the image is \(width)x\(height), over the \(limits.maxDimension)-pixel edge limit")
    }
    let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
    if overflow || pixels > limits.maxPixels {
      throw PipelineError(
        .pixelLimit,
        "the image has \(width)x\(height) = \(pixels / 1_000_000) MP, over the \(limits.maxPixels / 1_000_000) MP limit"
      )
    }
  }
}
