/// Why the multipart parser refused a body.
public struct MultipartError: Error, Sendable, Equatable, CustomStringConvertible {
  /// What was wrong.
  public enum Kind: Sendable, Equatable, CaseIterable {
    /// A boundary that is empty, longer than 70 bytes or holds characters RFC 2046 forbids.
    case invalidBoundary
    /// A boundary delimiter followed by something other than padding and CRLF, or `--`.
    case invalidDelimiter
    /// A part's header block exceeds `maxPartHeaderBytes`.
    case partHeaderTooLarge
    /// A part has more than `maxPartHeaderFields` header fields.
    case tooManyPartHeaderFields
    /// A part header line that is not a valid `name: value` field.
    case invalidPartHeader
    /// More than `maxParts` parts.
    case tooManyParts
    /// A part's body exceeds `maxPartBytes`.
    case partTooLarge
    /// The whole multipart body exceeds `maxTotalBytes`.
    case bodyTooLarge
    /// The body ended before the close delimiter (`--boundary--`).
    case missingFinalBoundary
  }

  public var kind: Kind

  public init(_ kind: Kind) { self.kind = kind }

  public var description: String { "MultipartError(\(kind))" }
}
