/// Why the pipeline refused an input or failed: a `kind` to branch on (its stable `code` for
/// clients and logs), a human `reason`, and the underlying library's message for logs only
/// (never shown to clients).
public struct PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What went wrong; the raw value is the stable code. Callers switch on it exhaustively, so a
  /// new kind does not compile until each of them has decided what it means.
  public enum Kind: String, Sendable, CaseIterable {
    case empty
    case unsupportedFormat = "unsupported_format"
    case unsupportedJPEGPrecision = "unsupported_jpeg_precision"
    case animatedUnsupported = "animated_unsupported"
    case tooLargeBytes = "too_large_bytes"
    case pixelLimit = "pixel_limit"
    case dimensionLimit = "dimension_limit"
    case tooManyItems = "too_many_items"
    case metadataTooLarge = "metadata_too_large"
    case corrupt
    case truncated
    case memoryBudget = "memory_budget"
    case deadlineExceeded = "deadline_exceeded"
    case cancelled
    /// The decoder needed more memory than the decode sandbox gives one image.
    case decoderMemoryLimit = "decoder_memory_limit"
    /// No decode sandbox is running (it is starting, or restarting after its helper died).
    case sandboxUnavailable = "sandbox_unavailable"
    /// A failure that is not the input's fault; the one 500 code, shared with the rest of the App.
    case `internal` = "internal_error"
  }

  public let kind: Kind
  /// A sentence for people: what was wrong with the input.
  public let reason: String
  /// The C library's message or other internal detail, for logs.
  public let detail: String?

  /// An error of `kind` (the sandboxed pipeline rebuilds the ones its children report).
  public init(_ kind: Kind, _ reason: String, detail: String? = nil) {
    self.kind = kind
    self.reason = reason
    self.detail = detail
  }

  /// The stable machine-readable code (`pixel_limit`, `truncated`, …).
  public var code: String { kind.rawValue }

  /// Every code the pipeline can produce, for the App's status table and its tests.
  public static let allCodes: [String] = Kind.allCases.map(\.rawValue)

  public var description: String {
    detail.map { "\(code): \(reason) (\($0))" } ?? "\(code): \(reason)"
  }

  static func empty() -> PipelineError { PipelineError(.empty, "the upload is empty") }
  static func unsupported(_ what: String) -> PipelineError {
    PipelineError(.unsupportedFormat, "\(what) is not a supported image format")
  }
  static func corrupt(_ reason: String, detail: String? = nil) -> PipelineError {
    PipelineError(.corrupt, reason, detail: detail)
  }
  static func truncated(_ reason: String, detail: String? = nil) -> PipelineError {
    PipelineError(.truncated, reason, detail: detail)
  }
  static func deadlineExceeded() -> PipelineError {
    PipelineError(.deadlineExceeded, "processing the image took longer than the pipeline deadline")
  }
  static func cancelled() -> PipelineError {
    PipelineError(.cancelled, "processing was cancelled by its caller")
  }
  static func `internal`(_ reason: String, detail: String? = nil) -> PipelineError {
    PipelineError(.internal, reason, detail: detail)
  }
}

extension PipelineError {
  /// The HEIF plan reader's refusal as a pipeline error.
  init(_ refusal: HEIFRefusal) {
    switch refusal.kind {
    case .imageSequence:
      self.init(.animatedUnsupported, "HEIF image sequences (animations) are not supported")
    case .unsupported:
      self.init(
        .unsupportedFormat, "the HEIF image uses a feature that is not supported", detail: refusal.reason)
    case .corrupt: self.init(.corrupt, "the HEIF image is malformed", detail: refusal.reason)
    case .truncated: self.init(.truncated, "the image data ends early", detail: refusal.reason)
    case .tooManyItems: self.init(.tooManyItems, refusal.reason)
    case .pixelLimit: self.init(.pixelLimit, refusal.reason)
    }
  }
}
