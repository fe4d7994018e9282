import ImageCodecs

extension PipelineError {
  /// A codec failure as a pipeline error; the C library's message goes to `detail` only.
  init(_ error: any Error, while stage: String) {
    guard let codec = error as? CodecError else {
      self.init(.internal, "\(stage) failed", detail: String(describing: error))
      return
    }
    let detail = codec.description
    switch codec.kind {
    case .unsupported:
      self.init(.unsupportedFormat, "the image uses a feature that cannot be decoded", detail: detail)
    case .truncated: self.init(.truncated, "the image data ends early", detail: detail)
    case .corrupt: self.init(.corrupt, "the image data is corrupt", detail: detail)
    case .tooLarge: self.init(.pixelLimit, "the image is too large to decode", detail: detail)
    case .internal: self.init(.internal, "\(stage) failed", detail: detail)
    }
  }
}
