/// The one error type of ImageCodecs: a stable `kind` to decide on, and the C library's message for logs.
public struct CodecError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What went wrong, in terms the pipeline can act on.
  public enum Kind: String, Sendable, Equatable {
    /// A valid file the codec will not decode (12-bit JPEG, imperfect lossless transform, …).
    case unsupported
    /// The data stops before the image does.
    case truncated
    /// The data is not a well-formed image of this format.
    case corrupt
    /// The image exceeds a size limit.
    case tooLarge
    /// A library failure that is not the input's fault (allocation, bad arguments).
    case `internal`
  }

  /// What went wrong.
  public let kind: Kind
  /// The codec that failed ("jpeg", "heif", "hevc", "png", "webp", "gif", "lcms", "zlib").
  public let codec: String
  /// The C library's message or our own detail; for logs only, never for clients or decisions.
  public let message: String

  /// Creates an error; `message` is for logs.
  public init(_ kind: Kind, codec: String, _ message: String) {
    self.kind = kind
    self.codec = codec
    self.message = message
  }

  /// "codec kind: message", for logs.
  public var description: String { "\(codec) \(kind.rawValue): \(message)" }
}
